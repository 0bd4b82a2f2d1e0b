"""OpenEnv's side of the serve tests, run by the interpreter of OpenEnv's own environment
(scripts/openenv_env.py), which the tests' interpreter cannot import. It imports only OpenEnv and
the standard library.

``python openenv_side.py clients``: OpenEnv's clients, driven over stdin and stdout, one JSON
object per line each way. Requests: ``{"op": "open", "kind": "generic" | "mcp", "base_url": URL}``
(answers a handle), ``{"op": "call", "handle": H, "method": NAME, "args": [...], "kwargs": {...}}``
(a method of the sync client: reset, step, state, list_tools, call_tool), ``{"op": "close",
"handle": H}``, ``{"op": "validate", "arguments": [...]}`` (``openenv validate ARGUMENTS``), and ``{"op": "play_together", "base_url": URL, "episodes": [{"seed": S,
"actions": [...]}, ...]}`` (every episode at once, each on an async GenericEnvClient of its own).
Answers: ``{"result": ...}`` or ``{"error": "Type: message"}``.

``python openenv_side.py countdown-server``: an environment written with OpenEnv's own server
classes, served by OpenEnv's ``create_fastapi_app`` on a free port of 127.0.0.1; prints its URL.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from typing import Any


def jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return jsonable(value.model_dump())
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "observation") and hasattr(value, "done"):  # a StepResult
        return {"observation": jsonable(value.observation), "reward": value.reward, "done": value.done}
    return value


def clients() -> None:
    from openenv.core.generic_client import GenericEnvClient
    from openenv.core.mcp_client import MCPToolClient

    kinds = {"generic": GenericEnvClient, "mcp": MCPToolClient}
    opened: dict[int, Any] = {}
    for line in sys.stdin:
        request = json.loads(line)
        try:
            op = request["op"]
            if op == "open":
                client = kinds[request["kind"]](base_url=request["base_url"]).sync()
                client.connect()
                opened[len(opened) + 1] = client
                result: Any = len(opened)
            elif op == "call":
                client = opened[request["handle"]]
                result = jsonable(getattr(client, request["method"])(*request.get("args", []),
                                                                     **request.get("kwargs", {})))
            elif op == "close":
                opened.pop(request["handle"]).close()
                result = None
            elif op == "validate":
                result = validate(request["arguments"])
            elif op == "play_together":
                result = asyncio.run(play_together(GenericEnvClient, request["base_url"], request["episodes"]))
            else:
                raise ValueError(f"unknown op {op!r}")
            answer = {"result": result}
        except Exception as e:  # noqa: BLE001 - every failure goes back to the test
            answer = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)
    for client in opened.values():
        client.close()


def validate(arguments: list[str]) -> dict[str, Any]:
    """``openenv validate ARGUMENTS`` through the command's own entry point, in this process:
    its exit code and output."""
    import contextlib
    import io

    from openenv.cli.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    sys.argv = ["openenv", "validate", *arguments]
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return {"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


async def play_together(client_class, base_url: str, episodes: list[dict[str, Any]]) -> list[list[Any]]:
    """Each episode on an async client of its own, all at once; per episode, the first prompt and
    then (prompt, reward, done) per step."""

    async def play(episode):
        async with client_class(base_url=base_url) as client:
            result = await client.reset(seed=episode["seed"])
            seen: list[Any] = [result.observation["prompt"]]
            for action in episode["actions"]:
                await asyncio.sleep(0)  # interleave the sessions
                result = await client.step({"message": action})
                seen.append([result.observation["prompt"], result.reward, result.done])
                if result.done:
                    break
            return seen

    return list(await asyncio.gather(*(play(episode) for episode in episodes)))


def countdown_server() -> None:
    import uvicorn
    from openenv.core.env_server import create_fastapi_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State

    class CountAction(Action):
        word: str

    class CountObservation(Observation):
        echoed: str
        length: int

    class CountdownEnvironment(Environment):
        """Echoes each word; the reward is its length; the episode ends after three words, or at
        once on the word ``stop``."""

        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self):
            super().__init__()
            self._state = State(episode_id=None, step_count=0)

        def reset(self, seed=None, episode_id=None, **kwargs) -> CountObservation:
            self._state = State(episode_id=episode_id or f"seed-{seed}", step_count=0)
            return CountObservation(echoed=f"start {seed}", length=0, done=False, reward=0.0)

        def step(self, action: CountAction, timeout_s=None, **kwargs) -> CountObservation:
            self._state.step_count += 1
            done = action.word == "stop" or self._state.step_count >= 3
            return CountObservation(echoed=action.word, length=len(action.word), done=done,
                                    reward=float(len(action.word)))

        @property
        def state(self) -> State:
            return self._state

    app = create_fastapi_app(CountdownEnvironment, CountAction, CountObservation, max_concurrent_envs=8)
    sock = socket.create_server(("127.0.0.1", 0))
    print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    {"clients": clients, "countdown-server": countdown_server}[sys.argv[1]]()

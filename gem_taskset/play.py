"""verifiers environments played as GEM environments, with the control inverted (``verifiers:<id>``
ids): the taskset's model calls become GEM observations, GEM's actions their replies.

``make("verifiers:gem-taskset", taskset={"env_id": "game:GuessTheNumber-v0-easy"})`` loads
verifiers' environment for the taskset id (its own ``Env``, else verifiers' single-agent one) with
the agent's runtime local (``subprocess``). ``reset(seed)`` starts an episode of task ``seed``
(modulo the taskset's size; the taskset must be finite) through verifiers' own
``Env.run_episode``, whose model is an OpenAI-compatible endpoint of this environment's, on
loopback: each chat request the agent's harness makes is an observation (the messages since the
model's last reply: the prompt first, then the user's or tools' answers), and each action the
reply to it. When verifiers' episode ends, the step that ended it is terminated, its observation
empty (verifiers asks nothing more), and carries the episode's reward (the sum of its traces'
rewards, as verifiers totals them; the turns before it earn 0); ``info`` holds each trace's
``rewards`` and ``metrics``. An episode verifiers marks
failed (an error in its hooks, its harness or scoring), or that does not ask or end within
``timeout`` seconds, fails that step (:class:`VerifiersEpisodeError`).
"""

from __future__ import annotations

import json
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gem_core.core import Env, ResetResult, StepResult
from gem_core.errors import EnvironmentFailure, GemError
from gem_core.vector.workers import BackgroundLoop

MODEL = "gem-policy"


class VerifiersEpisodeError(EnvironmentFailure):
    """verifiers' episode failed, or did not ask or end in time: the GEM episode ends failed."""


@dataclass
class _Request:
    """A chat request waiting for GEM's action."""

    body: dict[str, Any]
    answered: threading.Event = field(default_factory=threading.Event)
    reply: str = ""


class _Endpoint:
    """An OpenAI-compatible chat endpoint on 127.0.0.1 whose replies are GEM's actions: each
    request waits in ``requests`` until :meth:`answer`."""

    def __init__(self, timeout: float):
        self.requests: queue.Queue[_Request] = queue.Queue()
        self.timeout = timeout
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="gem-verifiers-endpoint", daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0,
                                                             "owned_by": "gem"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json(404, {"error": {"message": f"{self.path} is not served: only chat completions"}})
                    return
                request = _Request(body)
                endpoint.requests.put(request)
                if not request.answered.wait(endpoint.timeout):
                    self._json(504, {"error": {"message": "no action came in time"}})
                    return
                completion = {"id": "gem", "created": int(time.time()), "model": body.get("model", MODEL)}
                message = {"role": "assistant", "content": request.reply}
                usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
                if not body.get("stream"):
                    self._json(200, completion | {"object": "chat.completion", "usage": usage, "choices": [
                        {"index": 0, "finish_reason": "stop", "message": message}]})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                chunk = completion | {"object": "chat.completion.chunk"}
                for part in ({"choices": [{"index": 0, "delta": message, "finish_reason": None}]},
                             {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                             {"choices": [], "usage": usage}):
                    self.wfile.write(b"data: " + json.dumps(chunk | part).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


class VerifiersEnv(Env):
    """A verifiers environment as a GEM environment; see the module documentation.

    ``taskset``: the taskset id. ``taskset_config``: its config's fields (e.g. ``{"env_id": ...}``).
    ``agent``: the agent's config fields (default: the ``subprocess`` runtime). ``timeout``: seconds
    to wait for verifiers' next request or the episode's end.
    """

    blocking = True  # every call waits on verifiers' episode

    def __init__(self, taskset: str | None = None, *, taskset_config: dict[str, Any] | None = None,
                 agent: dict[str, Any] | None = None, timeout: float = 600.0):
        import verifiers.v1 as vf
        from verifiers.v1.configs.agent import agent_config_fields
        from verifiers.v1.utils.loaders import load_environment

        if not taskset:
            raise GemError("A verifiers environment needs its taskset id: make('verifiers:TASKSET-ID').")
        self.taskset_id, self.timeout = taskset, float(timeout)
        config_type = vf.env_config_type(taskset)
        roles = list(agent_config_fields(config_type()))
        if len(roles) != 1:
            raise GemError(f"verifiers:{taskset}'s environment has {len(roles)} agents ({', '.join(roles)}): GEM "
                           "plays one.")
        agent_fields = {"runtime": {"type": "subprocess"}, **(agent or {})}
        self._config = config_type(taskset={"id": taskset, **(taskset_config or {})}, **{roles[0]: agent_fields})
        self._env = load_environment(self._config)
        if not self._env.taskset.bounded:
            raise GemError(f"verifiers:{taskset} yields tasks forever: bound it (taskset_config) to play it by seed.")
        self._tasks = list(self._env.taskset)
        self._endpoint = _Endpoint(self.timeout)
        self._loop = BackgroundLoop("gem-verifiers")
        self._serving: Any = None
        self._loop.run(self._start(), self.timeout)
        self._episode: Future | None = None
        self._request: _Request | None = None

    async def _start(self) -> None:
        self._serving = self._env.serving()
        await self._serving.__aenter__()

    # ---- the environment API ----------------------------------------------------------

    def reset(self, seed: int | None = None, **options: Any) -> ResetResult:
        super().reset(seed)
        if options:
            raise GemError(f"verifiers:{self.taskset_id} takes no reset options; a task is chosen by its seed.")
        self._abandon()
        index = int(self.np_random.integers(len(self._tasks))) if seed is None else int(seed) % len(self._tasks)
        import verifiers.v1 as vf

        context = vf.ModelContext(client=vf.EvalClientConfig(base_url=self._endpoint.base_url,
                                                              api_key_var="GEM_VERIFIERS_UNUSED_KEY"),
                                  model=MODEL, sampling=vf.SamplingConfig())
        self._episode = self._loop.submit(self._env.run_episode(self._tasks[index], context))
        observation, ended = self._next()
        if ended is not None:
            raise VerifiersEpisodeError(f"verifiers:{self.taskset_id}'s episode ended before asking the model: "
                                        f"{_errors(ended)}")
        return observation, {"task": self._tasks[index].data.model_dump(mode="json", exclude_none=True),
                             "index": index}

    def step(self, action: str) -> StepResult:
        if self._request is None:
            raise GemError(f"verifiers:{self.taskset_id}: no episode in progress: reset first (also after an "
                           "episode ends).")
        request, self._request = self._request, None
        request.reply = action
        request.answered.set()
        observation, ended = self._next()
        if ended is None:
            return observation, 0.0, False, False, {}
        self._episode = None
        if not ended.ok:
            raise VerifiersEpisodeError(f"verifiers:{self.taskset_id}'s episode failed: {_errors(ended)}")
        info = {"rewards": [{name: r.score * r.weight for name, r in trace.rewards.items() if r is not None}
                            for trace in ended.traces],
                "metrics": [dict(trace.metrics) for trace in ended.traces]}
        return "", float(sum(trace.reward for trace in ended.traces)), True, False, info

    def clone(self) -> Env:
        raise GemError("A verifiers environment cannot be cloned: its episode runs in verifiers. "
                       "Replay it from its seed.")

    def close(self) -> None:
        self._abandon()
        if self._serving is not None:
            serving, self._serving = self._serving, None
            try:
                self._loop.run(serving.__aexit__(None, None, None), 60)
            except Exception:  # noqa: BLE001 - already torn down
                pass
        self._endpoint.close()
        self._loop.close()

    # ---- the episode in the background ---------------------------------------------------

    def _next(self) -> tuple[str, Any]:
        """(observation, None) for verifiers' next chat request, or ("", episode) when the episode ended."""
        assert self._episode is not None
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            try:
                self._request = self._endpoint.requests.get(timeout=0.05)
                return _new_messages(self._request.body.get("messages") or []), None
            except queue.Empty:
                pass
            if self._episode.done():
                try:
                    return "", self._episode.result()
                except Exception as e:  # noqa: BLE001 - verifiers' own failure
                    raise VerifiersEpisodeError(f"verifiers:{self.taskset_id}'s episode failed: "
                                                f"{type(e).__name__}: {e}") from None
        self._abandon()
        raise VerifiersEpisodeError(f"verifiers:{self.taskset_id}'s episode neither asked the model nor ended "
                                    f"within {self.timeout:g} s.")

    def _abandon(self) -> None:
        """Stop the episode in progress, if any (its pending request gets an empty reply)."""
        episode, self._episode = self._episode, None
        request, self._request = self._request, None
        if request is not None:
            request.answered.set()
        if episode is not None and not episode.done():
            episode.cancel()
            try:
                episode.result(30)
            except BaseException:  # noqa: BLE001 - cancelled, as asked
                pass
        while not self._endpoint.requests.empty():  # requests of the abandoned episode
            self._endpoint.requests.get_nowait().answered.set()


def _new_messages(messages: list[dict[str, Any]]) -> str:
    """The text of the messages after the model's last reply."""
    last = max((i for i, message in enumerate(messages) if message.get("role") == "assistant"), default=-1)
    return "\n\n".join(_text(message.get("content")) for message in messages[last + 1:] if message.get("content"))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _errors(episode: Any) -> str:
    found = [f"{error.type}: {error.message}" for error in episode.errors]
    for trace in episode.traces:
        found += [f"{error.type}: {error.message}" for error in trace.errors]
    return "; ".join(found) or "no error recorded"


__all__ = ["VerifiersEnv", "VerifiersEpisodeError"]

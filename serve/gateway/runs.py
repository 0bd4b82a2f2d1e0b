"""Episodes from agent programs: a harness GEM does not run plays a GEM environment through the
gateway, and the run becomes a GEM :class:`~gem_core.episodes.Episode`.

For each episode a :class:`Harness` opens a gateway session and an environment session of
``gem serve`` (:class:`~gem_serve.server.EnvServer`), resets the environment with the episode's
seed, and runs the agent program with a :class:`Task`: the first observation, the gateway's
address and key for this episode, and the environment's MCP endpoint (whose tools are ``step``
and the environment's tool wrappers' functions). The program plays the environment with tool
calls over MCP, or, observations as user messages, with :meth:`Task.step` (a Python program) or
the ``step`` tool.

An agent program is a Python callable taking the task (``async`` or not), or a command (a list
of arguments, or a shell line) run with the task in its environment variables:
``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``GEM_MODEL``, ``GEM_MCP_URL``, ``GEM_TASK`` (the first
observation), ``GEM_ENV_ID`` and ``GEM_SEED``.

The episode has one turn per model call, in order: its observation the JSON list of the messages
the call added (all of them where it opened a segment), its action the answer's text, its
``info["sampled"]`` the call's tokens (:mod:`gem_core.sampled`), ``info["steps"]`` the
environment steps its answer led to (``info["backend"]``: what the backend said of the call
besides, where it said anything), and its reward their rewards' sum (a step is credited to
the latest call before it). The last turn is marked terminated or truncated as the environment
ended the episode; ``final_observation`` is the environment's last.

An episode fails (:attr:`~gem_core.episodes.Episode.failure`) when the program raises or exits
non-zero (kind ``harness``), runs past ``timeout`` seconds (``deadline``: a command is killed, a
thread left to finish on its own), the environment fails a step (``error``), or the backend
fails a call (``error``, phase ``model``). Such an episode teaches nothing.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from gem_core.episodes import Episode, Turn
from gem_core.sampled import INFO_KEY
from gem_core.tools import actions
from gem_serve.gateway.server import Gateway
from gem_serve.gateway.server import Session as GatewaySession
from gem_serve.server import EnvServer
from gem_serve.sessions import Session as EnvSession

logger = logging.getLogger("gem_serve")

AgentProgram = Union[Callable[["Task"], Any], Sequence[str], str]
#: How long a killed command's output is kept in the failure's message.
OUTPUT_TAIL = 2000


@dataclass
class StepResult:
    """What :meth:`Task.step` returns."""

    observation: str
    reward: float
    done: bool
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Task:
    """One episode, as an agent program gets it."""

    env_id: str
    seed: int | None
    observation: str  # the first observation: the task
    base_url: str  # the gateway, for this episode's session (OpenAI's base_url)
    api_key: str
    model: str
    mcp_url: str  # the environment's tools over MCP (streamable HTTP)
    tools: list[dict[str, Any]]  # the same tools as OpenAI function schemas
    _env: EnvSession
    _loop: asyncio.AbstractEventLoop

    async def astep(self, action: str) -> StepResult:
        """Send ``action`` to the environment (observations as user messages)."""
        data = await self._env.step(action)
        return StepResult(data["observation"]["prompt"], float(data["reward"] or 0.0), bool(data["done"]),
                          data["observation"]["metadata"].get("info", {}))

    def step(self, action: str) -> StepResult:
        """:meth:`astep` from a program's own thread (not from the gateway's event loop)."""
        return asyncio.run_coroutine_threadsafe(self.astep(action), self._loop).result()

    def environment(self) -> dict[str, str]:
        """The task as environment variables (what a command gets)."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": self.api_key, "GEM_MODEL": self.model,
                "GEM_MCP_URL": self.mcp_url, "GEM_TASK": self.observation, "GEM_ENV_ID": self.env_id,
                "GEM_SEED": "" if self.seed is None else str(self.seed)}


class Harness:
    """Plays episodes of ``env_server``'s environment with an agent program through ``gateway``,
    both served at ``base_url`` (the gateway's routes at the root, the environment server's under
    ``env_path``: :func:`application`). Call :meth:`play` on the event loop that serves them."""

    def __init__(self, gateway: Gateway, env_server: EnvServer, base_url: str, *, timeout: float = 600.0,
                 env_path: str = "/env/0", threads: int = 256):
        from concurrent.futures import ThreadPoolExecutor

        self.gateway, self.env_server, self.base_url, self.timeout = gateway, env_server, base_url.rstrip("/"), timeout
        self.env_url = self.base_url + env_path
        self.threads = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gem-agent")  # Python programs

    async def play(self, agent: AgentProgram, seed: int | None, *, sampling: dict[str, Any] | None = None,
                   max_tokens: int | None = None) -> Episode:
        """One episode of ``agent`` from ``seed`` (see the module documentation); ``sampling``
        and ``max_tokens`` replace the gateway's for this episode's calls."""
        episode = Episode(env_id=self.env_server.env_id, seed=seed)
        env = await self.env_server.open_session()
        chat = self.gateway.open(sampling=sampling, max_tokens=max_tokens)
        steps: list[tuple[int, dict[str, Any]]] = []  # (the call it follows, the step's observation data)
        env.step_listeners.append(lambda data: steps.append((len(chat.calls) - 1, data)))
        try:
            first = await env.reset(seed, None, {})
            tools = [{"type": "function", "function": {"name": f.name, "description": f.description,
                                                       "parameters": f.parameters}}
                     for f in await env.in_worker(actions.functions, env.env)]
            task = Task(env.env_id, seed, first["observation"]["prompt"], f"{self.base_url}/sessions/{chat.id}/v1",
                        chat.key, self.gateway.model, f"{self.env_url}/sessions/{env.id}/mcp", tools, env,
                        asyncio.get_running_loop())
            await self._run(agent, task, episode)
        except Exception as e:  # noqa: BLE001 - the environment failed to start: nothing was played
            episode.fail("error", f"{type(e).__name__}: {e}", "reset")
        finally:
            await self.env_server.end_session(env, "the episode ended")
            self.gateway.close(chat.id)
        return record(episode, chat, steps, env.observation)

    async def _run(self, agent: AgentProgram, task: Task, episode: Episode) -> None:
        try:
            if callable(agent):
                if inspect.iscoroutinefunction(agent) or inspect.iscoroutinefunction(getattr(agent, "__call__", None)):
                    await asyncio.wait_for(agent(task), self.timeout)
                else:  # a thread of its own; one that hangs is left behind, its episode failed
                    await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(self.threads, agent, task),
                                           self.timeout)
            else:
                await self._command(agent, task, episode)
        except asyncio.TimeoutError:
            episode.fail("deadline", f"the agent program ran past {self.timeout:g} s", "agent")
        except Exception as e:  # noqa: BLE001 - the program is someone else's code
            episode.fail("harness", f"{type(e).__name__}: {e}", "agent")

    async def _command(self, command: Sequence[str] | str, task: Task, episode: Episode) -> None:
        words = shlex.split(command) if isinstance(command, str) else list(command)
        process = await asyncio.create_subprocess_exec(
            *words, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
            env={**os.environ, **task.environment()})
        try:
            output, _ = await asyncio.wait_for(process.communicate(), self.timeout)
        except asyncio.TimeoutError:
            _kill(process)
            await process.wait()
            raise
        except BaseException:
            _kill(process)
            raise
        if process.returncode != 0:
            tail = output.decode(errors="replace")[-OUTPUT_TAIL:]
            episode.fail("harness", f"{words[0]} exited with status {process.returncode}: {tail}", "agent")


def _kill(process: asyncio.subprocess.Process) -> None:
    """Kill ``process`` and everything it started (its own session)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def record(episode: Episode, chat: GatewaySession, steps: list[tuple[int, dict[str, Any]]],
           last_observation: str) -> Episode:
    """``episode`` with a turn per call of ``chat`` and the ``steps`` credited to them."""
    credited: dict[int, list[dict[str, Any]]] = {}
    for after, data in steps:
        credited.setdefault(max(after, 0), []).append(data)
    for index, call in enumerate(chat.calls):
        taken = credited.get(index, [])
        answer = call.answer
        action = answer.get("content") or ""
        if answer.get("tool_calls"):
            action += "".join(f"\n{json.dumps(c['function'], ensure_ascii=False)}" for c in answer["tool_calls"])
        episode.turns.append(Turn(
            json.dumps(call.messages, ensure_ascii=False), action, float(sum(float(d["reward"] or 0.0) for d in taken)),
            info={INFO_KEY: call.sampled.to_info(), "finish_reason": call.finish_reason,
                  "steps": [_step_summary(d) for d in taken], **({"backend": call.backend} if call.backend else {})}))
    ended = [data for _, data in steps if data["done"]]
    if ended and episode.turns:
        metadata = ended[-1]["observation"]["metadata"]
        episode.turns[-1].terminated = bool(metadata.get("terminated"))
        episode.turns[-1].truncated = bool(metadata.get("truncated")) and not metadata.get("fault")
        episode.turns[-1].info.update(metadata.get("info") or {})
    faults = [data["observation"]["metadata"]["fault"] for _, data in steps if data["observation"]["metadata"].get("fault")]
    if faults:
        episode.fail("error", str(faults[0].get("error", "")), "step")
    if chat.errors:
        episode.fail("error", chat.errors[0], "model")
    if not episode.turns and episode.failure is None:
        episode.fail("harness", "the agent program made no model call", "agent")
    episode.final_observation = last_observation
    return episode


def _step_summary(data: dict[str, Any]) -> dict[str, Any]:
    metadata = data["observation"]["metadata"]
    return {"reward": data["reward"], "done": data["done"], "step_count": metadata.get("step_count")}


def application(gateway: Gateway, *env_servers: EnvServer) -> Any:
    """One Starlette application serving them all: the gateway at the root, environment server
    ``k`` under ``/env/k``."""
    from contextlib import asynccontextmanager

    from starlette.applications import Starlette
    from starlette.routing import Mount

    @asynccontextmanager
    async def lifespan(app):
        try:
            yield
        finally:
            for server in env_servers:
                server.close()
            await gateway.shutdown()

    mounts = [Mount(f"/env/{k}", app=server.app()) for k, server in enumerate(env_servers)]
    return Starlette(routes=[*gateway.routes(), *mounts], lifespan=lifespan)


async def play_all(harness: Harness, agent: AgentProgram, seeds: Sequence[int | None],
                   on_episode: Callable[[Episode], Any] | None = None) -> list[Episode]:
    """Episodes of ``agent`` from every seed, played at once, in the order of ``seeds``."""
    async def one(seed):
        episode = await harness.play(agent, seed)
        if on_episode is not None:
            on_episode(episode)
        return episode

    return list(await asyncio.gather(*(one(seed) for seed in seeds)))


def agent_program(spec: AgentProgram) -> AgentProgram:
    """What ``spec`` names: a callable as it is, ``module:function`` as the callable it names, any
    other string or list as a command."""
    if isinstance(spec, str) and ":" in spec.split()[0] and " " not in spec.strip() and "/" not in spec:
        return python_program(spec)
    return spec


def python_program(spec: str) -> Callable[[Task], Any]:
    """The callable ``module:function`` names."""
    import importlib

    from gem_core.errors import GemError

    module, _, name = spec.partition(":")
    if not module or not name:
        raise GemError(f"An agent program is 'module:function' or a command; got {spec!r}.")
    if os.getcwd() not in sys.path:  # a module beside the user, as `python -m` would find it
        sys.path.insert(0, os.getcwd())
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise GemError(f"Cannot load the agent program {spec!r}: {type(e).__name__}: {e}") from None
    if not callable(found):
        raise GemError(f"The agent program {spec!r} is not callable.")
    return found

"""GEM environments over ORS, the Open Reward Standard, built on ors-sdk's own server classes.

Each served id is an :class:`ors.Environment` of its own (a subclass made by
:func:`environment_class`), served by :class:`ors.Server` beside OpenEnv's routes on ``gem
serve``'s port (``gem serve ID --ors``). ORS's names for things map onto GEM's:

* **environment**: the GEM id (ORS lists names in lower case and finds them in any case);
* **task**: ``{"env_id": ID, "seed": SEED}``, by index in two splits: ``train`` (task ``i`` is
  seed ``i``) and ``test`` (seed :data:`TEST_SEEDS_FROM` ``+ i``), ``tasks`` of each; a client may
  also send its own task spec ``{"seed": SEED}``;
* **session**: one GEM environment playing one episode from the task's seed (``/create`` makes
  and resets it); ``GET /{env}/prompt`` is the reset observation (text, and a visual task's images
  as PNG image blocks);
* **tools**: ``step`` (argument ``action``: the turn as the model would write it) and the functions
  of the environment's tool wrappers (``python``, ``search``, an MCP server's tools), each a step
  with the action text that calls it (:mod:`gem_core.tools.actions`), so rewards are the
  environment's own. A call's output is the observation; ``reward`` the step's reward,
  ``finished`` its ``terminated or truncated``, and ``metadata`` holds ``terminated``,
  ``truncated``, ``step_count``, ``env_id``, ``seed`` and the step's ``info``.

Bad requests get ORS's own error shapes and leave other sessions alone: an unknown environment is
HTTP 404, an unknown split, task index or task spec 400, an unknown session 404 (ors-sdk's
answers); a tool call with arguments that do not fit, to an unknown tool, or after the episode
finished is refused (``{"ok": false, "error": ...}``). An environment that fails in a step ends its
episode, and that call answers ORS's error event with the failure (an episode the environment broke
carries no reward); one that cannot be made or reset, or a session beyond ``max_sessions``, is
HTTP 503.

ors-sdk 0.1.0's client sends no environment name when a session is opened by split and index
(``environment.session(split=..., index=...)``); the server then opens it on its first
environment. With several environments, open sessions from a task
(``environment.session(task=environment.get_task(split, index))``), which names its environment.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from gem_core.core import Env
from gem_core.errors import GemError, MissingDependencyError
from gem_core.tools import actions
from gem_core.tools.base import ToolArgumentError, ToolConfigError, ToolFunction
from gem_serve import protocol
from gem_serve.protocol import ProtocolError
from gem_serve.sessions import Session

logger = logging.getLogger("gem_serve")

SPLITS = ("train", "test")
TEST_SEEDS_FROM = 1_000_000  # the seed of the test split's first task, far from the train split's
TASKS = 1000  # tasks (seeds) per split by default


def load_ors():
    """ors-sdk's package, its own logs (a line on standard output per request, and tracebacks of
    the failures GEM reports itself) off unless ``ORS_LOG_LEVEL`` asks for them (ors-sdk reads it
    when imported)."""
    os.environ.setdefault("ORS_LOG_LEVEL", "CRITICAL")
    try:
        import ors
    except ImportError:
        raise MissingDependencyError("Serving over ORS", "ors", "ors") from None
    return ors


class OrsHost:
    """What every served environment class shares: the worker threads, the session count and
    its limit, and the number of tasks per split."""

    def __init__(self, *, max_sessions: int = 64, tasks: int = TASKS):
        if tasks < 1:
            raise GemError(f"An ORS split needs at least one task, got tasks={tasks}.")
        self.max_sessions, self.tasks = max_sessions, tasks
        self.sessions: dict[str, Session] = {}
        self.executor = ThreadPoolExecutor(max_workers=max_sessions + 2, thread_name_prefix="gem-ors")

    async def open(self, env_id: str, factory: Callable[[], Env]) -> Session:
        """A session with a new environment, or HTTP 503 when there is no room or it cannot be made."""
        from fastapi import HTTPException

        if len(self.sessions) >= self.max_sessions:
            raise HTTPException(503, f"The server is at capacity ({self.max_sessions} sessions); try again later.")
        session = Session(env_id, self.executor)
        self.sessions[session.id] = session  # reserved while the environment is made
        try:
            await session.start(factory)
        except Exception as e:  # noqa: BLE001 - environment code may raise anything
            self.sessions.pop(session.id, None)
            logger.error("Making %s for an ORS session failed: %s: %s", env_id, type(e).__name__, e)
            raise HTTPException(503, f"Making {env_id} failed: {type(e).__name__}: {e}") from None
        return session

    def end(self, session: Session | None) -> None:
        if session is not None and self.sessions.pop(session.id, None) is not None:
            session.close()

    def close(self) -> None:
        for session in list(self.sessions.values()):
            self.end(session)
        self.executor.shutdown(wait=False, cancel_futures=True)

    def seed(self, split: str, index: int) -> int:
        """The seed of task ``index`` of ``split``; IndexError outside the split (ors-sdk answers 400)."""
        if isinstance(index, bool) or not 0 <= index < self.tasks:
            raise IndexError(index)
        return index if split == "train" else TEST_SEEDS_FROM + index


def environment_class(env_id: str, host: OrsHost, factory: Callable[[], Env], template: Env) -> type:
    """An :class:`ors.Environment` subclass serving ``env_id``: its tools are those of
    ``template`` (``step`` and its tool wrappers' functions; see the module documentation)."""
    ors = load_ors()
    base = _base_class()
    namespace: dict[str, Any] = {"env_id": env_id, "host": host, "factory": staticmethod(factory),
                                 "__doc__": f"GEM environment {env_id}", "__module__": __name__}
    for function in actions.functions(template)[1:]:  # step is the base class's
        if hasattr(base, function.name) or function.name.startswith("_"):
            raise GemError(f"{env_id}'s tool {function.name!r} cannot be served over ORS: the name is taken by "
                           "ors-sdk's Environment class.")
        namespace[function.name] = ors.tool(_tool_method(function))
    return type(f"Gem[{env_id}]", (base,), namespace)


def _tool_method(function: ToolFunction):
    """The ORS tool method that calls ``function`` of the session's tool wrappers."""
    from pydantic import BaseModel, ConfigDict

    schema = dict(function.parameters)

    class Arguments(BaseModel):  # any object: the tool checks it (ToolArgumentError), its schema is the tool's
        model_config = ConfigDict(extra="allow")

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return schema

    ors = load_ors()

    async def call(self, arguments: Arguments) -> ors.ToolOutput:
        return await self._call_function(function.name, dict(arguments.model_extra or {}))

    call.__name__ = call.__qualname__ = function.name
    call.__doc__ = function.description
    call.__annotations__ = {"arguments": Arguments, "return": ors.ToolOutput}
    return call


_BASE: type | None = None


def _base_class() -> type:
    """:class:`GemEnvironment`, made on first use (ors-sdk is imported only when ORS is served)."""
    global _BASE
    if _BASE is None:
        _BASE = _make_base_class()
    return _BASE


def _make_base_class() -> type:
    ors = load_ors()
    from fastapi import HTTPException
    from pydantic import BaseModel, ConfigDict, Field

    class StepArguments(BaseModel):
        model_config = ConfigDict(extra="forbid")
        action: str = Field(description="Your action, exactly as you would write it")

    class GemEnvironment(ors.Environment):
        """A GEM environment as an ORS environment (see :mod:`gem_serve.ors_server`); one
        instance per ORS session, playing one episode."""

        env_id: ClassVar[str]
        host: ClassVar[OrsHost]
        factory: ClassVar[Callable[[], Env]]

        def __init__(self, task_spec: Any = {}, secrets: Any = {}) -> None:  # noqa: B006 - ors-sdk's signature
            super().__init__(task_spec, secrets)
            self.seed = _seed_of(self.env_id, task_spec)
            self.session: Session | None = None
            self.first: dict[str, Any] = {}
            self.finished = False
            self.lock = asyncio.Lock()
            self.refusal: str | None = None

        @classmethod
        def name(cls) -> str:
            return cls.env_id

        # ---- tasks ------------------------------------------------------------------------

        @classmethod
        def list_splits(cls) -> list[Any]:
            return [ors.Split(name=split, type=split) for split in SPLITS]

        @classmethod
        def list_tasks(cls, split: str) -> list[dict[str, Any]]:
            return [cls._task(split, index) for index in range(cls.host.tasks)]

        @classmethod
        async def num_tasks(cls, split: str) -> int:
            return cls.host.tasks

        @classmethod
        async def get_task(cls, split: str, index: int) -> dict[str, Any]:
            return cls._task(split, index)

        @classmethod
        def _task(cls, split: str, index: int) -> dict[str, Any]:
            return {"env_id": cls.env_id, "seed": cls.host.seed(split, index)}

        # ---- the session ------------------------------------------------------------------

        async def setup(self) -> None:
            self.session = await self.host.open(self.env_id, self.factory)
            try:
                self.first = await self.session.reset(self.seed, None, {})
            except ProtocolError as e:
                self.host.end(self.session)
                raise HTTPException(503, str(e)) from None

        async def teardown(self) -> None:
            self.host.end(self.session)
            self.session = None

        def get_prompt(self) -> list[Any]:
            return _blocks(self.first)

        # ---- tools ------------------------------------------------------------------------

        @ors.tool
        async def step(self, arguments: StepArguments) -> ors.ToolOutput:
            """Take your turn: send ACTION as the environment's next action, exactly as you would write it.
            Returns the next observation, the reward and whether the episode is finished."""
            return await self._play(arguments.action)

        async def _call_tool(self, name: str, input: Any) -> Any:  # noqa: A002 - ors-sdk's signature
            """ors-sdk's dispatch, refusing calls after the episode finished and those whose step
            the environment failed or whose arguments the tool refused."""
            async with self.lock:  # one call at a time: ``refusal`` is this call's
                if self.finished or self.session is None or self.session.env is None:
                    return _refused("The episode is finished: no more tool calls in this session. "
                                    "Open a new session for another episode.")
                self.refusal = None
                result = await super()._call_tool(name, input)
                if self.refusal is not None:
                    return _refused(self.refusal)
                return result

        async def _call_function(self, name: str, arguments: dict[str, Any]) -> Any:
            session = self.session
            assert session is not None and session.env is not None
            try:
                action = await session.in_worker(actions.action_text, session.env, name, arguments)
            except (ToolArgumentError, ToolConfigError) as e:
                self.refusal = str(e)
                return ors.ToolOutput(blocks=[])
            return await self._play(action)

        async def _play(self, action: str) -> Any:
            assert self.session is not None
            data = await self.session.step(action)
            metadata = dict(data["observation"]["metadata"])
            self.finished = bool(data["done"])
            fault = metadata.get("fault")
            if fault:  # an error, not an output: the episode the environment broke earns nothing
                raise EpisodeFailed(f"The environment failed at step {metadata.get('step_count')} and the episode "
                                    f"is over: {fault.get('error')}")
            metadata.pop("images", None)
            metadata.pop("episode_id", None)
            metadata["seed"] = self.seed
            return ors.ToolOutput(blocks=_blocks(data), metadata=protocol.jsonable(metadata),
                                  reward=float(data["reward"]), finished=self.finished)

    # the annotations as objects: ors-sdk reads them with get_type_hints, which cannot see this function's names
    GemEnvironment.step.__annotations__ = {"arguments": StepArguments, "return": ors.ToolOutput}
    return GemEnvironment


class EpisodeFailed(GemError):
    """The session's environment failed in a step: ors-sdk answers the call with an error event."""


def _refused(message: str) -> Any:
    ors = load_ors()
    return ors.RunToolOutput(ors.RunToolError(error=message))


def _seed_of(env_id: str, task_spec: Any) -> int:
    """The seed of a task spec, ``{"seed": int}`` (with ``env_id``, if any, this environment's);
    a spec that is not one is HTTP 400."""
    from fastapi import HTTPException

    if not isinstance(task_spec, dict) or set(task_spec) - {"env_id", "seed"}:
        raise HTTPException(400, f'A task of {env_id} is {{"env_id": "{env_id}", "seed": <int>}}; '
                                 f"got {_short(task_spec)}.")
    seed = task_spec.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise HTTPException(400, f'A task\'s "seed" is an integer of 0 or more; got {_short(seed)}.')
    if task_spec.get("env_id", env_id) != env_id:
        raise HTTPException(400, f"This task is of {task_spec['env_id']!r}, not of {env_id!r}.")
    return seed


def _blocks(data: dict[str, Any]) -> list[Any]:
    """An observation (:func:`gem_serve.protocol.observation_data`) as ORS blocks: its text, then
    its images."""
    ors = load_ors()
    observation = data["observation"]
    blocks: list[Any] = [ors.TextBlock(text=observation[protocol.TEXT_FIELD])]
    for url in observation["metadata"].get("images") or ():
        header, _, payload = url.partition(",")
        blocks.append(ors.ImageBlock(data=payload, mimeType=header.removeprefix("data:").split(";")[0]))
    return blocks


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# ---- which ids, and the application -------------------------------------------------------------


def servable_ids(patterns: Iterable[str]) -> tuple[list[str], dict[str, str]]:
    """The registered ids that ``patterns`` name (ids, globs such as ``game:*``, or ``all``), and
    those a glob matched that cannot be served here, with why (multi-agent, families of ids, a
    download or a missing extra)."""
    from gem_core.registry import is_multiagent, list_envs, spec

    chosen: list[str] = []
    skipped: dict[str, str] = {}
    for pattern in patterns:
        if pattern != "all" and not any(c in pattern for c in "*?["):
            spec(pattern)  # an unknown id fails here, naming the closest
            if pattern not in chosen:
                chosen.append(pattern)
            continue
        for found in list_envs(None if pattern == "all" else pattern):
            if found.id in chosen:
                continue
            reason = _unservable(found, is_multiagent)
            if reason:
                skipped[found.id] = reason
            else:
                chosen.append(found.id)
    if not chosen:
        raise GemError(f"No servable environment matches {', '.join(patterns)}" +
                       (f" ({len(skipped)} matched but cannot be served here)." if skipped else "."))
    return chosen, skipped


def _unservable(found: Any, is_multiagent: Callable[[Any], bool]) -> str | None:
    if "{" in found.id:
        return "a family of ids: name one of its members"
    if not found.offline:
        return "needs a download"
    missing = sorted({extra for module, extra in found.requires.items() if importlib.util.find_spec(module) is None})
    if missing:
        return f"needs the extra(s) {', '.join(missing)}"
    if is_multiagent(found):
        return "multi-agent: serve one of its single-agent views"
    return None


class OrsService:
    """ORS for ``env_ids``: ``app`` is ors-sdk's application (mounted by ``gem serve``), ``host``
    what its environments share. Each id is made once here (its tools are listed from it);
    sessions then make their own. ``env_kwargs`` go to every ``make``."""

    def __init__(self, env_ids: Iterable[str], *, max_sessions: int = 64, tasks: int = TASKS,
                 env_kwargs: dict[str, Any] | None = None):
        from functools import partial

        from gem_core.vector.calls import close_quietly
        from gem_serve.sessions import make_env, make_servable

        ors = load_ors()
        self.env_ids = list(env_ids)
        self.host = OrsHost(max_sessions=max_sessions, tasks=tasks)
        lowered: dict[str, str] = {}
        classes = []
        try:
            for env_id in self.env_ids:
                if env_id.lower() in lowered:
                    raise GemError(f"ORS finds environments by name in any case: {lowered[env_id.lower()]!r} and "
                                   f"{env_id!r} cannot both be served.")
                lowered[env_id.lower()] = env_id
                template = make_servable(env_id, env_kwargs)
                try:
                    classes.append(environment_class(env_id, self.host, partial(make_env, env_id, env_kwargs), template))
                finally:
                    close_quietly(template)
            self.app = ors.Server(classes, return_errors="exception").app
        except BaseException:
            self.host.close()
            raise

    def lifespan(self):
        """ors-sdk's lifespan (its idle-session reaper; sessions torn down at the end)."""
        return self.app.router.lifespan_context(self.app)

    def close(self) -> None:
        self.host.close()


def guarded(app: Any, authorized: Callable[[Any], bool]) -> Any:
    """``app`` behind ``gem serve``'s token: a request whose headers ``authorized`` refuses gets
    HTTP 401 in ORS's error shape. ORS clients send the token as ``X-API-Key``; ``Authorization:
    Bearer`` works too."""
    from starlette.datastructures import Headers, MutableHeaders
    from starlette.responses import JSONResponse

    async def asgi(scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            headers = Headers(scope=scope)
            if "authorization" not in headers and "x-api-key" in headers:
                scope = dict(scope)
                mutable = MutableHeaders(scope=scope)
                mutable["authorization"] = f"Bearer {headers['x-api-key']}"
                headers = Headers(scope=scope)
            if not authorized(headers):
                response = JSONResponse({"detail": "Missing or wrong token: send X-API-Key: <token> "
                                                   "(or Authorization: Bearer <token>)."}, status_code=401)
                await response(scope, receive, send)
                return
        await app(scope, receive, send)

    return asgi


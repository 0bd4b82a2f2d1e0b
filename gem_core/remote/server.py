"""``gem serve``: a GEM environment behind OpenEnv's wire protocol.

Each WebSocket connection on ``/ws`` is a session with an environment of its own, made when the
connection opens and closed when it ends. Messages follow :mod:`gem_core.remote.protocol`.

* At most ``max_sessions`` sessions: one more is answered with a ``CAPACITY_REACHED`` error and
  closed (code 1013, try again later), as OpenEnv's server does.
* A session with no message for ``session_timeout`` seconds is closed (code 1000, reason
  "idle ..."), and its environment with it.
* With a ``token``, every request but ``GET /health`` must carry ``Authorization: Bearer
  <token>`` (or HTTP Basic auth with the token as password, which OpenEnv's client sends for a
  URL like ``http://user:<token>@host:port``); other WebSocket handshakes are refused (HTTP 403),
  other HTTP requests get 401.
* A message that is not valid gets an error reply and the session goes on; an environment that
  raises in ``step`` ends the episode with ``metadata.fault`` (done, reward 0, empty prompt); one
  that raises in ``reset`` gets an ``EXECUTION_ERROR`` reply. Neither touches other sessions.

Calls of environments that wait on I/O (``Env.blocking``, or a first call slower than
:data:`SLOW_CALL_S`) run in worker threads; native-async ones are awaited; the others run inline
on the event loop, paying no thread hop.

HTTP mirrors OpenEnv's server: ``GET /health``, ``/metadata``, ``/schema``, ``/state`` (of no
session); ``POST /reset`` resets a server-side environment outside any session and returns its
first observation. GEM environments keep state between steps, so ``POST /step`` outside a session
is refused (409): play episodes over ``/ws``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import importlib
import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from gem_core.core import Env
from gem_core.errors import GemError, MissingDependencyError
from gem_core.remote import protocol
from gem_core.remote.protocol import ProtocolError

logger = logging.getLogger("gem_core.remote")

REFUSAL_LINGER_S = 5.0  # how long a refused session stays open for the client's first message
SLOW_CALL_S = 0.002  # an inline call slower than this sends the session's later calls to a thread
INLINE, THREAD, AWAIT = "inline", "thread", "await"


def load(module: str, feature: str = "gem serve"):
    """Import an optional dependency of the ``openenv`` extra, or say how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(feature, module.split(".")[0], "openenv") from None


class Session:
    """One client's environment and episode."""

    __slots__ = ("id", "websocket", "env", "route", "decided", "busy", "last_active", "episode_id",
                 "step_count", "seed", "in_episode", "episode_return")

    def __init__(self, websocket: Any):
        self.id = uuid.uuid4().hex
        self.websocket = websocket
        self.env: Env | None = None
        self.route, self.decided = INLINE, False
        self.busy = False
        self.last_active = time.monotonic()
        self.episode_id: str | None = None
        self.step_count, self.seed, self.in_episode, self.episode_return = 0, None, False, 0.0

    def state(self, env_id: str) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.step_count, "env_id": env_id,
                "seed": self.seed, "done": not self.in_episode, "episode_return": self.episode_return}


class EnvServer:
    """Serves environments made by ``env_factory`` (see the module documentation)."""

    def __init__(self, env_factory: Callable[[], Env], env_id: str, *, max_sessions: int = 64,
                 session_timeout: float | None = None, token: str | None = None, description: str = ""):
        if max_sessions < 1:
            raise GemError(f"max_sessions must be at least 1, got {max_sessions}.")
        if session_timeout is not None and not session_timeout > 0:
            raise GemError(f"session_timeout must be a positive number of seconds, got {session_timeout}.")
        self.env_factory, self.env_id, self.description = env_factory, env_id, description
        self.max_sessions, self.session_timeout, self.token = max_sessions, session_timeout, token or None
        self.sessions: dict[str, Session] = {}
        self._executor = ThreadPoolExecutor(max_workers=max_sessions + 2, thread_name_prefix="gem-serve")
        self._http_env: Env | None = None
        self._http_lock: asyncio.Lock | None = None

    # ---- the application ----------------------------------------------------------------

    def app(self):
        """The Starlette application."""
        starlette = load("starlette.applications")
        from starlette.routing import Route, WebSocketRoute

        @asynccontextmanager
        async def lifespan(app):
            reaper = asyncio.create_task(self._reap()) if self.session_timeout else None
            try:
                yield
            finally:
                if reaper is not None:
                    reaper.cancel()
                self.close()

        return starlette.Starlette(routes=[
            Route("/health", self._health, methods=["GET"]),
            Route("/metadata", self._guarded(self._metadata), methods=["GET"]),
            Route("/schema", self._guarded(self._schema), methods=["GET"]),
            Route("/state", self._guarded(self._state), methods=["GET"]),
            Route("/reset", self._guarded(self._http_reset), methods=["POST"]),
            Route("/step", self._guarded(self._http_step), methods=["POST"]),
            WebSocketRoute("/ws", self._websocket),
        ], lifespan=lifespan)

    def close(self) -> None:
        """Close every session's environment (the server is stopping)."""
        for session in list(self.sessions.values()):
            self._end(session)
        if self._http_env is not None:
            _close_quietly(self._http_env)
            self._http_env = None
        self._executor.shutdown(wait=False, cancel_futures=True)

    # ---- WebSocket sessions -------------------------------------------------------------

    async def _websocket(self, websocket) -> None:
        if not self._authorized(websocket.headers):
            await websocket.close(code=1008)  # before accept: the handshake is refused with HTTP 403
            return
        await websocket.accept()
        if len(self.sessions) >= self.max_sessions:
            await _refuse(websocket, protocol.error(
                f"The server is at capacity ({self.max_sessions} sessions); try again later.",
                protocol.CAPACITY_REACHED, active_sessions=len(self.sessions), max_sessions=self.max_sessions),
                1013, "at capacity")
            return
        session = Session(websocket)
        self.sessions[session.id] = session  # reserved while the environment is made
        try:
            try:
                session.env = await asyncio.get_running_loop().run_in_executor(self._executor, self.env_factory)
            except Exception as e:  # noqa: BLE001 - environment code may raise anything
                logger.error("Making %s for a session failed: %s: %s", self.env_id, type(e).__name__, e)
                await _refuse(websocket, protocol.error(f"Making {self.env_id} failed: {type(e).__name__}: {e}",
                                                        protocol.FACTORY_ERROR), 1011, "environment failed to start")
                return
            session.route, session.decided = _route(session.env)
            while session.id in self.sessions:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect" or session.env is None:  # left, or closed as idle
                    break
                session.busy = True
                try:
                    reply = await self._handle(session, message.get("text") or message.get("bytes") or "")
                finally:
                    session.busy, session.last_active = False, time.monotonic()
                if reply is None:  # the client closed the session
                    await _close(websocket, 1000, "closed by the client")
                    break
                if not await _send(websocket, reply):
                    break
        except Exception as e:  # noqa: BLE001 - a broken connection ends only its session
            if session.id in self.sessions:
                logger.info("Session %s ended: %s: %s", session.id, type(e).__name__, e)
        finally:
            self._end(session)

    async def _handle(self, session: Session, raw: str | bytes) -> dict[str, Any] | None:
        try:
            message = protocol.decode(raw)
            kind = message.get("type")
            if kind == "step":
                return await self._step(session, protocol.action_text(message.get("data")))
            if kind == "reset":
                return await self._reset(session, *protocol.reset_arguments(message.get("data")))
            if kind == "state":
                return {"type": "state", "data": session.state(self.env_id)}
            if kind == "sample_action":  # GEM's own: a well-formed random action for the current state
                return {"type": "action", "data": {protocol.ACTION_FIELD: await self._call(session, "sample_random_action")}}
            if kind == "close":
                return None
            raise ProtocolError(f"Unknown message type {kind!r}; expected reset, step, state or close.",
                                protocol.UNKNOWN_TYPE)
        except ProtocolError as e:
            return protocol.error(str(e), e.code)
        except Exception as e:  # noqa: BLE001 - sample_random_action is environment code
            return protocol.error(f"{type(e).__name__}: {e}", protocol.EXECUTION_ERROR)

    async def _reset(self, session: Session, seed: int | None, episode_id: str | None,
                     options: dict[str, Any]) -> dict[str, Any]:
        from gem_core.vector.calls import checked_reset

        session.in_episode = False
        try:
            observation, info = checked_reset(await self._call(session, "reset", seed, **options))
        except Exception as e:  # noqa: BLE001
            logger.warning("%s failed to reset (seed %s): %s: %s", self.env_id, seed, type(e).__name__, e)
            return protocol.error(f"The environment failed to reset: {type(e).__name__}: {e}", protocol.EXECUTION_ERROR)
        session.episode_id = episode_id or uuid.uuid4().hex
        session.seed, session.step_count, session.in_episode, session.episode_return = seed, 0, True, 0.0
        return {"type": "observation", "data": protocol.observation_data(
            observation, None, False, False, info, env_id=self.env_id, episode_id=session.episode_id,
            step_count=0, seed=seed)}

    async def _step(self, session: Session, action: str) -> dict[str, Any]:
        from gem_core.vector.calls import checked_step

        if not session.in_episode:
            raise ProtocolError("No episode in progress: send a reset first (also after an episode ends).",
                                protocol.SESSION_ERROR)
        session.step_count += 1
        try:
            observation, reward, terminated, truncated, info = checked_step(await self._call(session, "step", action))
        except Exception as e:  # noqa: BLE001
            session.in_episode = False
            logger.warning("%s (seed %s) failed at step %d; the episode ends: %s: %s", self.env_id, session.seed,
                           session.step_count, type(e).__name__, e)
            fault = {"kind": "error", "phase": "step", "error": f"{type(e).__name__}: {e}"}
            return {"type": "observation", "data": protocol.observation_data(
                "", 0.0, False, True, {}, env_id=self.env_id, episode_id=session.episode_id,
                step_count=session.step_count, fault=fault)}
        session.episode_return += reward
        session.in_episode = not (terminated or truncated)
        return {"type": "observation", "data": protocol.observation_data(
            observation, reward, terminated, truncated, info, env_id=self.env_id, episode_id=session.episode_id,
            step_count=session.step_count)}

    async def _call(self, session: Session, method: str, *args: Any, **kwargs: Any) -> Any:
        env = session.env
        assert env is not None
        if session.route == AWAIT and method != "sample_random_action":
            return await getattr(env, "a" + method)(*args, **kwargs)
        if session.route != INLINE:
            return await asyncio.get_running_loop().run_in_executor(
                self._executor, partial(getattr(env, method), *args, **kwargs))
        start = time.perf_counter()
        result = getattr(env, method)(*args, **kwargs)
        if not session.decided and time.perf_counter() - start > SLOW_CALL_S:
            session.route, session.decided = THREAD, True
            logger.info("%s: calls take more than %.0f ms; this session's calls now run in a worker thread "
                        "(declare `blocking` on the environment to decide this yourself).", self.env_id,
                        SLOW_CALL_S * 1000)
        return result

    def _end(self, session: Session) -> None:
        if self.sessions.pop(session.id, None) is not None and session.env is not None:
            env, session.env = session.env, None
            if session.route == INLINE:
                _close_quietly(env)
            else:  # it may be running a call in a worker thread
                self._executor.submit(_close_quietly, env)

    async def _reap(self) -> None:
        """Close sessions idle for longer than the timeout."""
        timeout = self.session_timeout
        assert timeout is not None
        while True:
            await asyncio.sleep(min(timeout / 4, 1.0))
            now = time.monotonic()
            for session in list(self.sessions.values()):
                if not session.busy and session.env is not None and now - session.last_active > timeout:
                    logger.info("Session %s was idle for more than %g s; closing it.", session.id, timeout)
                    self._end(session)
                    await _close(session.websocket, 1000, f"idle for more than {timeout:g} s")

    # ---- HTTP ---------------------------------------------------------------------------

    def _authorized(self, headers) -> bool:
        if self.token is None:
            return True
        scheme, _, credentials = headers.get("authorization", "").partition(" ")
        given = credentials.strip()
        if scheme.lower() == "basic":
            try:
                given = base64.b64decode(given, validate=True).decode("utf-8").partition(":")[2]
            except (binascii.Error, UnicodeDecodeError):
                return False
        elif scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(given.encode(), self.token.encode())

    def _guarded(self, handler):
        from starlette.responses import JSONResponse

        async def guarded(request):
            if not self._authorized(request.headers):
                return JSONResponse({"detail": "Missing or wrong token: send Authorization: Bearer <token>."},
                                    status_code=401, headers={"WWW-Authenticate": "Bearer"})
            return await handler(request)

        return guarded

    async def _health(self, request):
        from starlette.responses import JSONResponse

        return JSONResponse({"status": "healthy"})

    async def _metadata(self, request):
        from starlette.responses import JSONResponse

        return JSONResponse({"name": self.env_id, "description": self.description or f"GEM environment {self.env_id}",
                             "version": _version(), "author": None, "documentation_url": None,
                             "readme_content": None})

    async def _schema(self, request):
        from starlette.responses import JSONResponse

        return JSONResponse(SCHEMA)

    async def _state(self, request):
        from starlette.responses import JSONResponse

        return JSONResponse({"episode_id": None, "step_count": 0, "env_id": self.env_id,
                             "active_sessions": len(self.sessions), "max_sessions": self.max_sessions})

    async def _http_reset(self, request):
        from gem_core.vector.calls import checked_reset
        from starlette.responses import JSONResponse

        body = await request.body()
        try:
            seed, _, options = protocol.reset_arguments(protocol.decode(body) if body.strip() else {})
        except ProtocolError as e:
            return JSONResponse({"detail": str(e)}, status_code=400 if e.code == protocol.INVALID_JSON else 422)
        if self._http_lock is None:
            self._http_lock = asyncio.Lock()
        async with self._http_lock:
            loop = asyncio.get_running_loop()
            try:
                if self._http_env is None:
                    self._http_env = await loop.run_in_executor(self._executor, self.env_factory)
                observation, info = checked_reset(await loop.run_in_executor(
                    self._executor, partial(self._http_env.reset, seed, **options)))
            except Exception as e:  # noqa: BLE001
                return JSONResponse({"detail": f"The environment failed to reset: {type(e).__name__}: {e}"},
                                    status_code=500)
        data = protocol.observation_data(observation, None, False, False, info, env_id=self.env_id,
                                         episode_id=None, step_count=0, seed=seed)
        return JSONResponse(data)

    async def _http_step(self, request):
        from starlette.responses import JSONResponse

        try:
            body = protocol.decode(await request.body())
            if not isinstance(body.get("action"), dict):
                raise ProtocolError('A step request is {"action": {"message": "<action text>"}}.')
            protocol.action_text(body["action"])
        except ProtocolError as e:
            return JSONResponse({"detail": str(e)}, status_code=400 if e.code == protocol.INVALID_JSON else 422)
        return JSONResponse({"detail": "GEM environments keep their episode between steps, and an HTTP request "
                                       "has no episode: open a session on the WebSocket endpoint /ws "
                                       "(OpenEnv's EnvClient does) and step there."}, status_code=409)


SCHEMA = {
    "action": {"title": "Action", "type": "object", "additionalProperties": False, "required": [protocol.ACTION_FIELD],
               "properties": {protocol.ACTION_FIELD: {"type": "string", "description": "The action text"},
                              "metadata": {"type": "object"}}},
    "observation": {"title": "Observation", "type": "object",
                    "properties": {protocol.TEXT_FIELD: {"type": "string", "description": "The observation text"},
                                   "done": {"type": "boolean"}, "reward": {"type": ["number", "null"]},
                                   "metadata": {"type": "object", "description": "env_id, episode_id, step_count, "
                                                "terminated, truncated, info, seed, images, fault"}}},
    "state": {"title": "State", "type": "object",
              "properties": {"episode_id": {"type": ["string", "null"]}, "step_count": {"type": "integer"},
                             "env_id": {"type": "string"}, "seed": {"type": ["integer", "null"]},
                             "done": {"type": "boolean"}, "episode_return": {"type": "number"}}},
}


def _route(env: Env) -> tuple[str, bool]:
    """How a session's calls run, and whether that is settled (else the first slow call sends
    them to a thread)."""
    from gem_core.vector.execution import AWAIT as VECTOR_AWAIT, THREAD as VECTOR_THREAD, declared_blocking, execution_kind

    kind = execution_kind(env)
    if kind == VECTOR_AWAIT:
        return AWAIT, True
    if kind == VECTOR_THREAD:
        return THREAD, True
    return INLINE, declared_blocking(env) is not None


async def _refuse(websocket, message: dict[str, Any], code: int, reason: str) -> None:
    """Answer a session that cannot start with ``message``, then close it. A client reads the
    error as the reply to its first message, so the connection stays open until that comes."""
    await _send(websocket, message)
    try:
        await asyncio.wait_for(websocket.receive(), REFUSAL_LINGER_S)
    except Exception:  # noqa: BLE001 - timed out, or the client left
        pass
    await _close(websocket, code, reason)


async def _send(websocket, message: dict[str, Any]) -> bool:
    try:
        await websocket.send_text(protocol.encode(message))
        return True
    except Exception:  # noqa: BLE001 - the client went away
        return False


async def _close(websocket, code: int, reason: str) -> None:
    try:
        await websocket.close(code=code, reason=reason)
    except Exception:  # noqa: BLE001 - already closed
        pass


def _close_quietly(env: Env) -> None:
    try:
        env.close()
    except Exception as e:  # noqa: BLE001
        logger.warning("Closing %r raised %s: %s", env, type(e).__name__, e)


def _version() -> str:
    from gem_core import __version__

    return __version__


def serve(env_id: str, *, host: str = "127.0.0.1", port: int = 8000, max_sessions: int = 64,
          session_timeout: float | None = None, token: str | None = None, log_level: str = "warning",
          env_kwargs: dict[str, Any] | None = None, announce: Callable[[str], None] = print) -> None:
    """Serve ``env_id`` until interrupted; ``announce`` gets the URL once the port is bound (port 0
    picks a free one)."""
    import socket

    from gem_core.multiagent import MultiAgentEnv
    from gem_core.registry import make, spec

    uvicorn = load("uvicorn")
    load("websockets")  # uvicorn's WebSocket implementation
    env_kwargs = dict(env_kwargs or {})
    first = make(env_id, **env_kwargs)  # a wrong id or keyword fails here, before serving
    if isinstance(first, MultiAgentEnv):
        first.close()
        raise GemError(f"{env_id} is a multi-agent environment: serve one of its single-agent views instead "
                       f"(the built-in games: {env_id}-vs-bot, {env_id}-selfplay).")
    server = EnvServer(partial(make, env_id, **env_kwargs), env_id, max_sessions=max_sessions,
                       session_timeout=session_timeout, token=token, description=spec(env_id).description)
    server._http_env = first
    ipv6 = ":" in host
    try:
        sock = socket.create_server((host, port), family=socket.AF_INET6 if ipv6 else socket.AF_INET)
    except OSError as e:
        first.close()
        raise GemError(f"Cannot listen on {host}:{port}: {e}") from None
    bound = sock.getsockname()[1]
    config = uvicorn.Config(server.app(), log_level=log_level, lifespan="on")
    announce(f"http://{f'[{host}]' if ipv6 else host}:{bound}")
    uvicorn.Server(config).run(sockets=[sock])

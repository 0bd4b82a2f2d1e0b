"""``gem serve``: a GEM environment behind OpenEnv's HTTP API.

Each session (:class:`~gem_serve.sessions.Session`) has an environment of its own. A
WebSocket connection on ``/ws`` opens one and plays it with the messages of
:mod:`gem_serve.protocol`; the session ends with the connection. A session opened over MCP
(``openenv/session/create`` on ``/mcp``, :mod:`gem_serve.mcp_endpoint`) is played with tool
calls, and reset or stepped by a WebSocket that joins it (``/ws?session_id=ID``, as OpenEnv's
``MCPToolClient`` does); it ends with ``openenv/session/close`` or the idle timeout. A plain MCP
client's ``initialize`` opens and resets a session of its own (``Mcp-Session-Id``), which it plays
with tool calls and ends with ``DELETE /mcp``.

* At most ``max_sessions`` sessions: one more is refused with a ``CAPACITY_REACHED`` error (a
  WebSocket gets it as an error message and is closed with code 1013), as OpenEnv's server does.
* A session with no call for ``session_timeout`` seconds is closed (a WebSocket with code 1000,
  reason "idle ..."), and its environment with it.
* With a ``token``, every request but ``GET /health`` must carry ``Authorization: Bearer
  <token>`` (or HTTP Basic auth with the token as password, which OpenEnv's client sends for a
  URL like ``http://user:<token>@host:port``); other WebSocket handshakes are refused (HTTP 403),
  other HTTP requests get 401.
* A message that is not valid gets an error reply and the session goes on; an environment that
  raises in ``step`` ends the episode with ``metadata.fault`` (done, reward 0, empty prompt); one
  that raises in ``reset`` gets an ``EXECUTION_ERROR`` reply. Neither touches other sessions.

HTTP mirrors OpenEnv's server in simulation mode: ``GET /health``, ``/metadata``, ``/schema``,
``/state`` (of no session), ``/openapi.json`` (made by Starlette from the handlers' docstrings);
``POST /reset`` resets a server-side environment outside any session and returns its first
observation. GEM environments keep state between steps, so ``POST /step`` outside a session is
refused (409): play episodes over ``/ws`` or ``/mcp``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import gc
import hmac
import importlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from gem_core.core import Env
from gem_core.errors import GemError, MissingDependencyError
from gem_core.vector.calls import checked_reset, close_quietly
from gem_serve import protocol
from gem_serve.protocol import ProtocolError
from gem_serve.sessions import Session, make_env, make_servable

logger = logging.getLogger("gem_serve")

REFUSAL_LINGER_S = 5.0  # how long a refused session stays open for the client's first message
API_VERSION = "1.0.0"  # the version of OpenEnv's HTTP API served (its validator reads it from /openapi.json)


def load(module: str, feature: str = "gem serve"):
    """Import an optional dependency of the ``openenv`` extra, or say how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(feature, module.split(".")[0], "openenv") from None


class EnvServer:
    """Serves environments made by ``env_factory`` (see the module documentation).
    ``template_env``, when given, is the environment the sessionless HTTP calls use (else one is
    made on first need)."""

    def __init__(self, env_factory: Callable[[], Env], env_id: str, *, max_sessions: int = 64,
                 session_timeout: float | None = None, token: str | None = None, description: str = "",
                 template_env: Env | None = None, ors: Any = None):
        if max_sessions < 1:
            raise GemError(f"max_sessions must be at least 1, got {max_sessions}.")
        if session_timeout is not None and not session_timeout > 0:
            raise GemError(f"session_timeout must be a positive number of seconds, got {session_timeout}.")
        self.env_factory, self.env_id = env_factory, env_id
        self.description = description or f"GEM environment {env_id}"
        self.max_sessions, self.session_timeout, self.token = max_sessions, session_timeout, token or None
        self.sessions: dict[str, Session] = {}
        self._executor = ThreadPoolExecutor(max_workers=max_sessions + 2, thread_name_prefix="gem-serve")
        self._template_env = template_env
        self._template_lock: asyncio.Lock | None = None
        self.ors = ors  # a gem_serve.ors_server.OrsService, served on the routes OpenEnv's leave free

    @property
    def version(self) -> str:
        from gem_core import __version__

        return __version__

    # ---- the application ----------------------------------------------------------------

    def app(self):
        """The Starlette application."""
        starlette = load("starlette.applications")
        load("mcp_types", "gem serve's /mcp endpoint")
        load("yaml", "gem serve's /openapi.json")
        from starlette.routing import Route, WebSocketRoute
        from starlette.schemas import SchemaGenerator

        from gem_serve.mcp_endpoint import MCPEndpoint

        self._mcp_endpoint = MCPEndpoint(self)

        @asynccontextmanager
        async def lifespan(app):
            reaper = asyncio.create_task(self._reap()) if self.session_timeout else None
            try:
                if self.ors is None:
                    yield
                else:
                    async with self.ors.lifespan():
                        yield
            finally:
                if reaper is not None:
                    reaper.cancel()
                self.close()

        routes = [
            Route("/health", self._health, methods=["GET"]),
            Route("/metadata", self._guarded(self._metadata), methods=["GET"]),
            Route("/schema", self._guarded(self._schema), methods=["GET"]),
            Route("/state", self._guarded(self._state), methods=["GET"]),
            Route("/reset", self._guarded(self._http_reset), methods=["POST"]),
            Route("/step", self._guarded(self._http_step), methods=["POST"]),
            Route("/mcp", self._guarded(self._mcp), methods=["POST"]),
            WebSocketRoute("/ws", self._websocket),
        ]
        plain_mcp = [Route("/mcp", self._guarded(self._mcp_endpoint), methods=["GET", "DELETE"], include_in_schema=False),
                     Route("/sessions/{id}/mcp", self._guarded(self._mcp_endpoint), methods=["GET", "POST", "DELETE"],
                           include_in_schema=False)]
        self._openapi = SchemaGenerator({
            "openapi": "3.0.3",
            "info": {"title": f"GEM environment {self.env_id}", "version": API_VERSION,
                     "description": f"{self.description} (gem-adapters {self.version}). Sessions: WebSocket /ws."},
        }).get_schema(routes)
        routes.append(Route("/openapi.json", self._guarded(self._openapi_json), methods=["GET"],
                            include_in_schema=False))
        routes += plain_mcp
        if self.ors is not None:  # every other path is ORS's (gem_serve.ors_server)
            from starlette.routing import Mount

            from gem_serve.ors_server import guarded

            routes.append(Mount("", app=guarded(self.ors.app, self._authorized)))
        return starlette.Starlette(routes=routes, lifespan=lifespan)

    def close(self) -> None:
        """Close every session's environment (the server is stopping)."""
        for session in list(self.sessions.values()):
            self.sessions.pop(session.id, None)
            session.close()
        if self._template_env is not None:
            close_quietly(self._template_env)
            self._template_env = None
        if self.ors is not None:
            self.ors.close()
        self._executor.shutdown(wait=False, cancel_futures=True)

    # ---- sessions -----------------------------------------------------------------------

    async def open_session(self) -> Session:
        """A new session with its environment; a :class:`ProtocolError` (``CAPACITY_REACHED``,
        ``FACTORY_ERROR``) when there is no room or the environment cannot be made."""
        if len(self.sessions) >= self.max_sessions:
            raise ProtocolError(f"The server is at capacity ({self.max_sessions} sessions); try again later.",
                                protocol.CAPACITY_REACHED)
        session = Session(self.env_id, self._executor)
        self.sessions[session.id] = session  # reserved while the environment is made
        try:
            await session.start(self.env_factory)
        except Exception as e:  # noqa: BLE001 - environment code may raise anything
            self.sessions.pop(session.id, None)
            logger.error("Making %s for a session failed: %s: %s", self.env_id, type(e).__name__, e)
            raise ProtocolError(f"Making {self.env_id} failed: {type(e).__name__}: {e}", protocol.FACTORY_ERROR) from None
        return session

    async def end_session(self, session: Session, reason: str) -> None:
        """Close ``session``'s environment, and the WebSocket attached to it with ``reason``."""
        if self.sessions.pop(session.id, None) is None:
            return
        session.close()
        websocket, session.websocket = session.websocket, None
        if websocket is not None:
            await _close(websocket, 1000, reason)

    async def template_call(self, function: Callable[[Env], Any]) -> Any:
        """``function(env)`` in a worker thread, on the environment of the sessionless calls."""
        if self._template_lock is None:
            self._template_lock = asyncio.Lock()
        loop = asyncio.get_running_loop()
        async with self._template_lock:
            if self._template_env is None:
                self._template_env = await loop.run_in_executor(self._executor, self.env_factory)
            return await loop.run_in_executor(self._executor, function, self._template_env)

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
                    await self.end_session(session, f"idle for more than {timeout:g} s")

    # ---- WebSocket sessions -------------------------------------------------------------

    async def _websocket(self, websocket) -> None:
        if not self._authorized(websocket.headers):
            await websocket.close(code=1008)  # before accept: the handshake is refused with HTTP 403
            return
        await websocket.accept()
        joining = websocket.query_params.get("session_id")
        try:
            session = self._join(joining) if joining else await self.open_session()
        except ProtocolError as e:
            code, reason = {protocol.CAPACITY_REACHED: (1013, "at capacity"),
                            protocol.FACTORY_ERROR: (1011, "environment failed to start")}.get(e.code, (1008, "refused"))
            details = ({"active_sessions": len(self.sessions), "max_sessions": self.max_sessions}
                       if e.code == protocol.CAPACITY_REACHED else {})
            await _refuse(websocket, protocol.error(str(e), e.code, **details), code, reason)
            return
        session.websocket = websocket
        try:
            while session.env is not None:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect" or session.env is None:  # left, or closed as idle
                    break
                reply = await self._handle(session, message.get("text") or message.get("bytes") or "")
                session.last_active = time.monotonic()
                if reply is None:  # the client closed the session
                    await _close(websocket, 1000, "closed by the client")
                    break
                if not await _send(websocket, reply):
                    break
        except Exception as e:  # noqa: BLE001 - a broken connection ends only its session
            if session.id in self.sessions:
                logger.info("Session %s ended: %s: %s", session.id, type(e).__name__, e)
        finally:
            if session.websocket is websocket:
                session.websocket = None
            if not joining:  # a session the connection opened ends with it
                await self.end_session(session, "the connection closed")

    def _join(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None or session.env is None:
            raise ProtocolError(f"Unknown session_id {session_id!r}: open one with openenv/session/create on /mcp.",
                                protocol.SESSION_ERROR)
        if session.websocket is not None:
            raise ProtocolError(f"Session {session_id!r} already has a WebSocket attached.", protocol.SESSION_ERROR)
        return session

    async def _handle(self, session: Session, raw: str | bytes) -> dict[str, Any] | None:
        try:
            message = protocol.decode(raw)
            kind = message.get("type")
            if kind == "step":
                return {"type": "observation", "data": await session.step(protocol.action_text(message.get("data")))}
            if kind == "reset":
                return {"type": "observation", "data": await session.reset(*protocol.reset_arguments(message.get("data")))}
            if kind == "state":
                return {"type": "state", "data": session.state()}
            if kind == "sample_action":  # GEM's own: a well-formed random action for the current state
                return {"type": "action", "data": {protocol.ACTION_FIELD: await session.sample_action()}}
            if kind == "close":
                return None
            raise ProtocolError(f"Unknown message type {kind!r}; expected reset, step, state or close.",
                                protocol.UNKNOWN_TYPE)
        except ProtocolError as e:
            return protocol.error(str(e), e.code)
        except Exception as e:  # noqa: BLE001 - sample_random_action is environment code
            return protocol.error(f"{type(e).__name__}: {e}", protocol.EXECUTION_ERROR)

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

        @functools.wraps(handler)  # keeps the docstring, which the OpenAPI document is made from
        async def guarded(request):
            if not self._authorized(request.headers):
                return JSONResponse({"detail": "Missing or wrong token: send Authorization: Bearer <token>."},
                                    status_code=401, headers={"WWW-Authenticate": "Bearer"})
            return await handler(request)

        return guarded

    async def _health(self, request):
        """The server is up.
        ---
        summary: Health check (no token needed)
        responses:
          200: {description: '{"status": "healthy"}'}
        """
        from starlette.responses import JSONResponse

        return JSONResponse({"status": "healthy"})

    async def _metadata(self, request):
        """What is served.
        ---
        summary: The environment's name, description and version
        responses:
          200: {description: 'name, description, version, author, documentation_url, readme_content'}
        """
        from starlette.responses import JSONResponse

        return JSONResponse({"name": self.env_id, "description": self.description, "version": self.version,
                             "author": None, "documentation_url": None, "readme_content": None})

    async def _schema(self, request):
        """The JSON schemas of actions, observations and states.
        ---
        summary: Action, observation and state schemas
        responses:
          200: {description: '{"action": ..., "observation": ..., "state": ...}'}
        """
        from starlette.responses import JSONResponse

        return JSONResponse(SCHEMA)

    async def _state(self, request):
        """The server's state (no session's: a session's state is a message on /ws).
        ---
        summary: Sessions in use
        responses:
          200: {description: 'env_id, active_sessions, max_sessions'}
        """
        from starlette.responses import JSONResponse

        return JSONResponse({"episode_id": None, "step_count": 0, "env_id": self.env_id,
                             "active_sessions": len(self.sessions), "max_sessions": self.max_sessions})

    async def _http_reset(self, request):
        """A first observation, outside any session.
        ---
        summary: Reset a server-side environment and return its first observation
        requestBody:
          content:
            application/json:
              schema: {type: object, properties: {seed: {type: integer, nullable: true}}}
        responses:
          200: {description: '{"observation": {"prompt": ..., "metadata": ...}, "reward": null, "done": false}'}
          400: {description: The body is not JSON}
          422: {description: The body is not a valid reset}
          500: {description: The environment failed to reset}
        """
        from starlette.responses import JSONResponse

        body = await request.body()
        try:
            seed, _, options = protocol.reset_arguments(protocol.decode(body) if body.strip() else {})
        except ProtocolError as e:
            return JSONResponse({"detail": str(e)}, status_code=400 if e.code == protocol.INVALID_JSON else 422)
        try:
            observation, info = checked_reset(await self.template_call(lambda env: env.reset(seed, **options)))
        except Exception as e:  # noqa: BLE001
            return JSONResponse({"detail": f"The environment failed to reset: {type(e).__name__}: {e}"},
                                status_code=500)
        return JSONResponse(protocol.observation_data(observation, None, False, False, info, env_id=self.env_id,
                                                      episode_id=None, step_count=0, seed=seed))

    async def _http_step(self, request):
        """Refused: GEM environments keep their episode between steps; step over /ws or /mcp.
        ---
        summary: Step outside a session (refused)
        requestBody:
          content:
            application/json:
              schema: {type: object, properties: {action: {type: object}}}
        responses:
          409: {description: No episode outside a session; step over /ws or /mcp}
          422: {description: The body is not a valid step}
        """
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
                                       "(OpenEnv's EnvClient does) and step there, or call tools on /mcp."},
                            status_code=409)

    async def _mcp(self, request):
        """The environment's tools, over MCP's JSON-RPC 2.0.
        ---
        summary: MCP JSON-RPC (initialize, tools/list, tools/call, openenv/session/create and close)
        requestBody:
          content:
            application/json:
              schema: {type: object, properties: {jsonrpc: {type: string}, id: {}, method: {type: string},
                                                  params: {type: object}}}
        responses:
          200: {description: A JSON-RPC 2.0 response or error object}
          202: {description: A notification was received}
        """
        return await self._mcp_endpoint(request)

    async def _openapi_json(self, request):
        from starlette.responses import JSONResponse

        return JSONResponse(self._openapi)


SCHEMA = {
    "action": {"title": "MessageAction", "type": "object", "additionalProperties": False,  # not "Action": verifiers'
               "required": [protocol.ACTION_FIELD],  # openenv taskset takes an "Action" for MCP's generic one
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


def create_app(env_id: str, *, max_sessions: int = 64, session_timeout: float | None = None, token: str | None = None,
               env_kwargs: dict[str, Any] | None = None, ors_ids: list[str] | None = None,
               ors_tasks: int | None = None):
    """The ASGI application serving ``env_id`` (what ``gem serve`` runs; an exported package's
    ``server/app.py`` builds its ``app`` with it); with ``ors_ids``, ORS serves those ids too
    (:mod:`gem_serve.ors_server`, ``ors_tasks`` tasks per split)."""
    from gem_core.registry import spec

    first = make_servable(env_id, env_kwargs)
    ors = None
    if ors_ids:
        from gem_serve.ors_server import TASKS, OrsService

        try:
            ors = OrsService(ors_ids, max_sessions=max_sessions, tasks=ors_tasks or TASKS)
        except BaseException:
            close_quietly(first)
            raise
    server = EnvServer(partial(make_env, env_id, env_kwargs), env_id, max_sessions=max_sessions,
                       session_timeout=session_timeout, token=token, description=spec(env_id).description,
                       template_env=first, ors=ors)
    try:
        return server.app()
    except BaseException:
        server.close()
        raise


def serve(env_id: str, *, host: str = "127.0.0.1", port: int = 8000, max_sessions: int = 64,
          session_timeout: float | None = None, token: str | None = None, log_level: str = "warning",
          env_kwargs: dict[str, Any] | None = None, ors_ids: list[str] | None = None, ors_tasks: int | None = None,
          announce: Callable[[str], None] = print) -> None:
    """Serve ``env_id`` until interrupted (and ``ors_ids`` over ORS, see :func:`create_app`);
    ``announce`` gets the URL once the port is bound (port 0 picks a free one)."""
    import socket

    uvicorn = load("uvicorn")
    load("websockets")  # uvicorn's WebSocket implementation
    ipv6 = ":" in host
    try:
        sock = socket.create_server((host, port), family=socket.AF_INET6 if ipv6 else socket.AF_INET)
    except OSError as e:
        raise GemError(f"Cannot listen on {host}:{port}: {e}") from None
    try:
        app = create_app(env_id, max_sessions=max_sessions, session_timeout=session_timeout, token=token,
                         env_kwargs=env_kwargs, ors_ids=ors_ids, ors_tasks=ors_tasks)
    except BaseException:
        sock.close()
        raise
    bound = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level=log_level, lifespan="on")
    gc.freeze()  # what is loaded by now lives as long as the server: the collector need not scan it
    announce(f"http://{f'[{host}]' if ipv6 else host}:{bound}")
    uvicorn.Server(config).run(sockets=[sock])

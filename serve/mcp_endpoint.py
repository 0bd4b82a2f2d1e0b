"""``POST /mcp``: the served environment's tools over MCP's JSON-RPC 2.0, on ``gem serve``'s
sessions, as OpenEnv's servers and clients (``MCPToolClient``) speak it.

One POST carries one JSON-RPC request and gets one JSON-RPC response (HTTP 200); a
notification gets HTTP 202 and no body. Messages are read, checked and written with the MCP SDK's
types (``mcp-types``): each request's params are validated, and each result shaped, for the
protocol version of the request (the ``MCP-Protocol-Version`` header, else MCP's default).

Methods: ``initialize``, ``ping``, ``tools/list``, ``tools/call``, and OpenEnv's session methods
``openenv/session/create`` (a new session; its id) and ``openenv/session/close`` (``session_id``).
The tools are :mod:`gem_core.tools.actions`' functions; a call is a step of the session's
episode, and its result carries the observation as text (and images) and, in
``structuredContent``, the observation, reward, done and the rest of the step.

Two ways to a session:

* OpenEnv's: ``tools/list`` and ``tools/call`` take it as ``session_id`` in their params, opened
  with ``openenv/session/create`` and reset on ``/ws?session_id=...`` (as ``MCPToolClient`` does).
* Plain MCP (streamable HTTP, as the ``mcp`` SDK's ``Client`` and agent harnesses speak it):
  ``initialize`` on ``/mcp`` opens a session with its own environment, resets it (with the seed
  of the URL's ``?seed=N``, if any) and answers with its id in the ``Mcp-Session-Id`` header,
  which later requests carry; the first observation is the result's ``instructions``. Such a
  session also has a ``reset`` tool (a new episode, optionally with a ``seed``), and ends with
  ``DELETE /mcp`` or the idle timeout. ``/sessions/{id}/mcp`` reaches a session opened (and
  reset) beforehand, by whoever runs the episode: its ``initialize`` resets nothing. A request
  whose ``Mcp-Session-Id`` names no session gets HTTP 404, as MCP asks, so a client starts anew.

Errors are JSON-RPC error objects and leave the session as it was: a body that is not JSON
(``-32700``), not a request or a tool call outside an episode (``-32600``), an unknown method
(``-32601``), bad params, an unknown tool, arguments that do not fit it or an unknown session
(``-32602``). An environment that raises in a step ends the episode and answers ``isError``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

import mcp_types as types
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError

from gem_core.core import Env
from gem_core.tools import actions
from gem_core.tools.base import ToolArgumentError, ToolConfigError, ToolFunction
from gem_serve.protocol import ProtocolError
from gem_serve.sessions import Session

logger = logging.getLogger("gem_serve")

CREATE_SESSION, CLOSE_SESSION = "openenv/session/create", "openenv/session/close"
SESSION_HEADER = "mcp-session-id"
RESET = ToolFunction("reset", "Start a new episode of the environment (after one ends, or to start over). Returns "
                              "its first observation.",
                     {"type": "object", "properties": {"seed": {"type": "integer", "description": "Seed of the episode "
                                                                                                  "(optional)"}}})


class RequestError(Exception):
    """A request answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


class SessionHost(Protocol):
    """What the endpoint needs of its server (:class:`gem_serve.server.EnvServer`)."""

    sessions: dict[str, Session]
    description: str
    version: str

    async def open_session(self) -> Session: ...

    async def end_session(self, session: Session, reason: str) -> None: ...

    async def template_call(self, function: Callable[[Env], Any]) -> Any: ...


class MCPEndpoint:
    """Answers the JSON-RPC requests posted to ``/mcp`` of ``server``."""

    def __init__(self, server: SessionHost):
        self.server = server
        self.handlers = {
            "initialize": self._initialize, "ping": self._ping, "tools/list": self._list_tools,
            "tools/call": self._call_tool, CREATE_SESSION: self._create_session, CLOSE_SESSION: self._close_session,
        }

    async def __call__(self, request):
        """The Starlette endpoint (``/mcp`` and ``/sessions/{id}/mcp``)."""
        from starlette.responses import JSONResponse, Response

        bound_id = request.path_params.get("id") or request.headers.get(SESSION_HEADER)
        bound = self.server.sessions.get(bound_id) if bound_id else None
        if bound_id and (bound is None or bound.env is None):
            return JSONResponse(_error(None, types.INVALID_REQUEST, f"Unknown session {bound_id!r} (closed, timed out "
                                       "or never opened): initialize again."), status_code=404)
        if request.method == "GET":  # no stream of server messages: MCP lets a server say so
            return Response(status_code=405, headers={"Allow": "POST, DELETE"})
        if request.method == "DELETE":
            if bound is None:
                return JSONResponse(_error(None, types.INVALID_REQUEST, "DELETE /mcp needs the Mcp-Session-Id header."),
                                    status_code=400)
            await self.server.end_session(bound, "closed by the MCP client")
            return Response(status_code=204)
        version = request.headers.get("mcp-protocol-version", types.DEFAULT_NEGOTIATED_VERSION)
        if version not in HANDSHAKE_PROTOCOL_VERSIONS:
            version = LATEST_HANDSHAKE_VERSION
        try:
            body = json.loads(await request.body())
        except (ValueError, UnicodeDecodeError) as e:
            return JSONResponse(_error(None, types.PARSE_ERROR, f"Parse error: {e}"))
        if isinstance(body, dict) and "method" in body and "id" not in body:
            return Response(status_code=202)  # a notification: nothing to answer
        try:
            message = types.JSONRPCRequest.model_validate(body)
        except ValidationError as e:
            request_id = body.get("id") if isinstance(body, dict) and isinstance(body.get("id"), (str, int)) else None
            return JSONResponse(_error(request_id, types.INVALID_REQUEST, "Invalid request: a JSON-RPC 2.0 request is "
                                       f'{{"jsonrpc": "2.0", "id": ..., "method": ..., "params": {{...}}}} ({_problems(e)})'))
        headers = {}
        try:
            if message.method == "initialize" and bound is None:
                bound = await self._open_plain(request.query_params.get("seed"))
            if bound is not None:
                headers["Mcp-Session-Id"] = bound.id
            result = await self._answer(message.method, dict(message.params or {}), version, bound)
        except RequestError as e:
            return JSONResponse(_error(message.id, e.code, str(e)), headers=headers)
        return JSONResponse(types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)
                            .model_dump(by_alias=True, mode="json"), headers=headers)

    async def _open_plain(self, seed: str | None) -> Session:
        """A session for a plain MCP client, its episode started."""
        try:
            number = None if seed is None else int(seed)
        except ValueError:
            raise RequestError(types.INVALID_PARAMS, f"?seed= must be an integer, got {seed!r}.") from None
        try:
            session = await self.server.open_session()
        except ProtocolError as e:
            raise RequestError(types.INTERNAL_ERROR, f"{e} ({e.code})") from None
        session.plain_mcp = True
        try:
            await session.reset(number, None, {})
        except ProtocolError as e:
            await self.server.end_session(session, "the environment failed to reset")
            raise RequestError(types.INTERNAL_ERROR, str(e)) from None
        return session

    async def _answer(self, method: str, params: dict[str, Any], version: str,
                      bound: Session | None = None) -> dict[str, Any]:
        handler = self.handlers.get(method)
        if handler is None:
            raise RequestError(types.METHOD_NOT_FOUND, f"Method not found: {method!r}; this server answers "
                                                       f"{', '.join(self.handlers)}.")
        if method in methods.SPEC_CLIENT_METHODS:
            spec_params = {key: value for key, value in params.items() if key != "session_id"}
            try:
                methods.validate_client_request(method, version, spec_params)
            except ValidationError as e:
                raise RequestError(types.INVALID_PARAMS, f"Invalid params for {method}: {_problems(e)}") from None
        result = await handler(params, version, bound)
        if method in methods.SPEC_CLIENT_METHODS:
            return methods.serialize_server_result(method, version, result)
        return result

    # ---- methods ------------------------------------------------------------------------

    async def _initialize(self, params: dict[str, Any], version: str, bound: Session | None) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        negotiated = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
        server = self.server
        return _dump(types.InitializeResult(
            protocol_version=negotiated, capabilities=types.ServerCapabilities(tools=types.ToolsCapability(list_changed=False)),
            server_info=types.Implementation(name="gem-serve", version=server.version),
            instructions=bound.observation if bound is not None else server.description))

    async def _ping(self, params: dict[str, Any], version: str, bound: Session | None) -> dict[str, Any]:
        return {}

    async def _list_tools(self, params: dict[str, Any], version: str, bound: Session | None) -> dict[str, Any]:
        session = self._session(params, bound, required=False)
        try:
            if session is not None:
                listed = await session.in_worker(actions.functions, session.env)
            else:
                listed = await self.server.template_call(actions.functions)
        except ToolConfigError as e:
            raise RequestError(types.INTERNAL_ERROR, f"The environment's tools cannot be listed: {e}") from None
        if session is not None and session.plain_mcp:
            listed = [*listed, RESET]
        return _dump(types.ListToolsResult(tools=[
            types.Tool(name=f.name, description=f.description, input_schema=f.parameters) for f in listed]))

    async def _call_tool(self, params: dict[str, Any], version: str, bound: Session | None) -> dict[str, Any]:
        call = types.CallToolRequestParams.model_validate(params)
        session = self._session(params, bound, required=True)
        assert session is not None
        if call.name == RESET.name and session.plain_mcp:
            return _dump(_tool_result(await self._reset(session, call.arguments or {})))
        try:
            action = await session.in_worker(actions.action_text, session.env, call.name, call.arguments or {})
            data = await session.step(action)
        except (ToolArgumentError, ToolConfigError) as e:
            raise RequestError(types.INVALID_PARAMS, str(e)) from None
        except ProtocolError as e:  # no episode in progress
            raise RequestError(types.INVALID_REQUEST, str(e)) from None
        return _dump(_tool_result(data))

    async def _create_session(self, params: dict[str, Any], version: str, bound: Session | None) -> dict[str, Any]:
        try:
            session = await self.server.open_session()
        except ProtocolError as e:  # at capacity, or the environment failed to start
            raise RequestError(types.INTERNAL_ERROR, f"{e} ({e.code})") from None
        return {"session_id": session.id}

    async def _close_session(self, params: dict[str, Any], version: str, bound: Session | None) -> dict[str, Any]:
        session = self._session(params, bound, required=True)
        assert session is not None
        await self.server.end_session(session, "closed by openenv/session/close")
        return {"session_id": session.id, "closed": True}

    async def _reset(self, session: Session, arguments: dict[str, Any]) -> dict[str, Any]:
        seed = arguments.get("seed")
        if set(arguments) - {"seed"} or not (seed is None or (isinstance(seed, int) and not isinstance(seed, bool))):
            raise RequestError(types.INVALID_PARAMS, f"reset takes one optional argument, 'seed': an integer; got "
                                                     f"{dict(arguments)!r:.200}.")
        try:
            return {**await session.reset(seed, None, {}), "reward": 0.0}
        except ProtocolError as e:
            raise RequestError(types.INTERNAL_ERROR, str(e)) from None

    def _session(self, params: dict[str, Any], bound: Session | None, *, required: bool) -> Session | None:
        session_id = params.get("session_id")
        if session_id is None and bound is not None:
            return bound
        if session_id is None:
            if required:
                raise RequestError(types.INVALID_PARAMS, 'This call needs "session_id" in its params: open a session '
                                                         f'with {CREATE_SESSION} and reset it on /ws?session_id=ID.')
            return None
        session = self.server.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None or session.env is None:
            raise RequestError(types.INVALID_PARAMS, f"Unknown session_id {session_id!r} (closed, timed out, or never "
                                                     f"opened: {CREATE_SESSION} opens one).")
        return session


def _tool_result(data: dict[str, Any]) -> types.CallToolResult:
    """A step's observation data as a tool's result."""
    observation = data["observation"]
    metadata = dict(observation.get("metadata") or {})
    images = metadata.pop("images", [])
    structured = {"observation": observation["prompt"], "reward": data["reward"], "done": data["done"], **metadata}
    content: list[Any] = [types.TextContent(type="text", text=observation["prompt"])]
    for url in images:
        header, _, payload = url.partition(",")
        content.append(types.ImageContent(type="image", data=payload, mime_type=header[len("data:"):].split(";")[0]))
    fault = metadata.get("fault")
    if fault:
        content = [types.TextContent(type="text", text=f"The environment failed; the episode ends: {fault['error']}")]
    return types.CallToolResult(content=content, structured_content=structured, is_error=bool(fault))


def _dump(model) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def _error(request_id: str | int | None, code: int, message: str) -> dict[str, Any]:
    error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
    return {**error.model_dump(by_alias=True, exclude_none=True, mode="json"), "id": request_id}


def _problems(error: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in error.errors()[:5])

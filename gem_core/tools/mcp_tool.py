"""The MCP tool: lets the model call the tools of Model Context Protocol servers.

Servers are reached over stdio (a command this tool starts) or streamable HTTP (a URL). Each
server gets one connection, kept open across calls and episodes and shared by every tool made
with the same server settings; all connections live on one background event loop, so calls from
many environments (threads or async tasks) run concurrently. When a server dies, the call in
flight answers with an error observation and the next call reconnects (restarting a stdio
server).
"""

from __future__ import annotations

import asyncio
import atexit
import builtins
import concurrent.futures
import contextlib
import json
import os
import shlex
import threading
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gem_core.errors import MissingDependencyError
from gem_core.tools.base import Tool, ToolArgumentError, ToolCall, ToolConfigError, ToolFunction, ToolOutput, find_block

_CONNECTION_CLOSED = -32000  # the MCP SDK's error code for a connection that went away
_EXCEPTION_GROUP = getattr(builtins, "BaseExceptionGroup", ())  # Python 3.11+


@dataclass(frozen=True)
class ServerSpec:
    """How to reach one MCP server: a stdio ``command`` or a streamable-HTTP ``url``."""

    name: str
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        target = self.url if self.url else shlex.join(self.command)
        return f"MCP server {self.name!r} ({target})"

    def client(self):
        """A new, unconnected ``mcp.Client`` for this server (timeouts are applied by callers)."""
        mcp = _mcp()
        if self.url:
            transport = self.url
            if self.headers:
                import httpx2  # the HTTP client the MCP SDK uses
                from mcp.client.streamable_http import streamable_http_client

                http = httpx2.AsyncClient(headers=dict(self.headers), timeout=httpx2.Timeout(30, read=300))
                transport = streamable_http_client(self.url, http_client=http)
            return mcp.Client(transport)
        params = mcp.StdioServerParameters(command=self.command[0], args=list(self.command[1:]),
                                           env=dict(self.env) or None, cwd=self.cwd)
        return mcp.Client(params)


class MCPTool(Tool):
    """Calls tools on MCP servers.

    Give exactly one of:

    * ``command``: a stdio server to start (``"python server.py"`` or a list of arguments), with
      optional ``env`` and ``cwd``;
    * ``url``: a streamable-HTTP server (``http://127.0.0.1:8000/mcp``), with optional ``headers``;
    * ``config``: several servers, as the common ``{"mcpServers": {name: {...}}}`` mapping (or the
      path of a JSON file holding it); each entry has ``command`` and ``args`` (plus ``env``,
      ``cwd``) or ``url`` (plus ``headers``). Tool names are then prefixed ``<server>_``.

    ``timeout`` bounds each call, ``connect_timeout`` each (re)connection.

    The model calls a tool with ``<tool_call><tool_name>NAME</tool_name><arguments>{...}</arguments>
    </tool_call>`` (or ``<tool_call>{"name": NAME, "arguments": {...}}</tool_call>``); the answer is
    ``<tool_response>...</tool_response>``. A call fails when it is malformed, names an unknown
    tool, times out, the tool reports an error, or the server is unreachable.
    """

    name = "mcp"
    tool_type = "mcp"
    blocking = True

    def __init__(self, command: str | Sequence[str] | None = None, *, url: str | None = None,
                 config: Mapping[str, Any] | str | os.PathLike[str] | None = None,
                 env: Mapping[str, str] | None = None, cwd: str | None = None,
                 headers: Mapping[str, str] | None = None, timeout: float = 30.0, connect_timeout: float = 60.0):
        _mcp()  # fail early, with the install hint, when the SDK is missing
        self.specs = _server_specs(command, url, config, env, cwd, headers)
        self.timeout = float(timeout)
        self.connect_timeout = float(connect_timeout)
        self._connections = [_POOL.acquire(spec, self.connect_timeout) for spec in self.specs]
        self._closed = False
        self._instructions: str | None = None

    # --- what the model sees ---------------------------------------------------------------

    def instructions(self) -> str:
        """The servers' tools and how to call them. Connects on first use; while a server is down
        the last listing is reused, and with none yet, :class:`ToolConfigError` says why."""
        try:
            return _background().run(self._ainstructions(), self._listing_timeout())
        except TimeoutError as e:
            raise ToolConfigError(f"Cannot list the tools of {', '.join(s.describe() for s in self.specs)}: "
                                  f"{e}.") from None

    async def ainstructions(self) -> str:
        return await _background().arun(self._ainstructions())

    def parse(self, action: str) -> ToolCall | None:
        block = find_block(action, "<tool_call>", "</tool_call>")
        if block is None:
            return None
        start, end, inner = block
        name, arguments, error = read_call(inner)
        return ToolCall(self.name, (name, arguments), start, end, error)

    def execute(self, call: ToolCall) -> ToolOutput:
        if call.error is not None:
            return self.failed_call(call)
        try:
            return _background().run(self._aexecute(call), self._listing_timeout() + self.timeout)
        except TimeoutError:
            return _answer("[the MCP call did not finish in time]", False, {"error": "timeout", "timed_out": True})

    async def aexecute(self, call: ToolCall) -> ToolOutput:
        if call.error is not None:
            return self.failed_call(call)
        return await _background().arun(self._aexecute(call))

    def failed_call(self, call: ToolCall) -> ToolOutput:
        return _answer(f"[invalid tool call: {call.error}]", False, {"error": call.error})

    def functions(self) -> list[ToolFunction]:
        """The servers' tools, named as the model calls them (connects if needed)."""
        try:
            tools = _background().run(self._tools(), self._listing_timeout())
        except (TimeoutError, _ServerFailure) as e:
            raise ToolConfigError(f"Cannot list the tools of {', '.join(s.describe() for s in self.specs)}: "
                                  f"{e}.") from None
        return [ToolFunction(name, tool.description or "", tool.input_schema or {"type": "object", "properties": {}})
                for name, _, tool in tools]

    def call_text(self, function: str, arguments: Mapping[str, Any]) -> str:
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError(f"{function}'s arguments must be an object, got {type(arguments).__name__}.")
        payload = json.dumps({"name": function, "arguments": dict(arguments)}, ensure_ascii=False)
        return "<tool_call>" + payload.replace("</", "<\\/") + "</tool_call>"  # JSON's \/ keeps the block closed

    def tool_names(self) -> list[str]:
        """The names of the servers' tools, as the model calls them (connects if needed)."""
        return _background().run(self._tool_names(), self._listing_timeout())

    def _listing_timeout(self) -> float:
        return self.connect_timeout * len(self.specs) + 5

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            for connection in self._connections:
                _POOL.release(connection)

    # --- on the background loop ------------------------------------------------------------

    async def _tools(self) -> list[tuple[str, _Connection, Any]]:
        """(name the model uses, connection, tool) for every tool of every server."""
        found = []
        prefix = len(self.specs) > 1
        for connection in self._connections:
            for tool in await connection.tools():
                name = f"{connection.spec.name}_{tool.name}" if prefix else tool.name
                found.append((name, connection, tool))
        return found

    async def _tool_names(self) -> list[str]:
        return [name for name, _, _ in await self._tools()]

    async def _ainstructions(self) -> str:
        try:
            tools = await self._tools()
        except _ServerFailure as e:
            if self._instructions is not None:
                return self._instructions
            raise ToolConfigError(str(e)) from None
        listing = "\n".join(json.dumps({
            "type": "function",
            "function": {"name": name, "description": tool.description or "",
                         "parameters": tool.input_schema or {"type": "object", "properties": {}}},
        }) for name, _, tool in sorted(tools, key=lambda t: t[0]))
        self._instructions = (
            "You can call the tools listed below. To call one, write\n"
            "<tool_call>\n<tool_name>NAME</tool_name>\n<arguments>{\"param\": \"value\"}</arguments>\n"
            "</tool_call>\n"
            "with the arguments as a JSON object following the tool's parameter schema. Make one call "
            "per message; its result comes back inside <tool_response>...</tool_response>.\n\n"
            f"Available tools:\n{listing}"
        )
        return self._instructions

    async def _aexecute(self, call: ToolCall) -> ToolOutput:
        name, arguments = call.arguments
        try:
            tools = {tool_name: (connection, tool) for tool_name, connection, tool in await self._tools()}
        except _ServerFailure as e:
            return _answer(f"[{e}]", False, {"error": str(e), "server_failed": True})
        if name not in tools:
            known = ", ".join(sorted(tools)) or "none"
            return _answer(f"[unknown tool {name!r}; available tools: {known}]", False,
                           {"error": f"unknown tool {name!r}"})
        connection, tool = tools[name]
        try:
            result = await connection.call(tool.name, arguments, self.timeout)
        except asyncio.TimeoutError:
            return _answer(f"[tool {name!r} timed out after {self.timeout:g} seconds]", False,
                           {"error": "timeout", "timed_out": True})
        except _ServerFailure as e:
            return _answer(f"[{e}]", False, {"error": str(e), "server_failed": True})
        except _CallRejected as e:
            return _answer(f"[{e}]", False, {"error": str(e)})
        text = _result_text(result)
        if result.is_error:
            return _answer(f"[tool error: {text}]", False, {"error": text})
        return _answer(text, True, {})


def _answer(text: str, success: bool, info: dict[str, Any]) -> ToolOutput:
    return ToolOutput(f"\n<tool_response>\n{text}\n</tool_response>\n", success, info)


def read_call(inner: str) -> tuple[str, dict[str, Any], str | None]:
    """(tool name, arguments, error) from the inside of a ``<tool_call>`` block: either
    ``<tool_name>NAME</tool_name><arguments>{...}</arguments>`` or ``{"name": NAME, "arguments": {...}}``."""
    named = find_block(inner, "<tool_name>", "</tool_name>")
    if named is not None:
        name = named[2].strip()
        raw = find_block(inner, "<arguments>", "</arguments>")
        text = raw[2].strip() if raw is not None else ""
        try:
            arguments = json.loads(text) if text else {}
        except ValueError as e:
            return name, {}, f"the arguments are not valid JSON ({e})"
    else:
        try:
            payload = json.loads(inner)
        except ValueError:
            return "", {}, ("expected <tool_name>NAME</tool_name><arguments>{...}</arguments> inside "
                            "<tool_call>")
        if not isinstance(payload, dict):
            return "", {}, "the tool call must be a JSON object with 'name' and 'arguments'"
        name, arguments = payload.get("name"), payload.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as e:
                return str(name), {}, f"the arguments are not valid JSON ({e})"
    if not isinstance(name, str) or not name:
        return "", {}, "the tool name is missing"
    if not isinstance(arguments, dict):
        return name, {}, "the arguments must be a JSON object"
    return name, arguments, None


def _result_text(result: Any) -> str:
    parts = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind}: {block.mime_type}, {len(block.data)} bytes of base64]")
        elif kind == "resource":
            resource = block.resource
            parts.append(getattr(resource, "text", None) or f"[resource: {resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource: {block.uri}]")
        else:
            parts.append(str(block))
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts) if parts else "(no output)"


def _server_specs(command, url, config, env, cwd, headers) -> list[ServerSpec]:
    given = [name for name, value in (("command", command), ("url", url), ("config", config)) if value]
    if len(given) != 1:
        raise ToolConfigError("MCPTool needs exactly one of command= (a stdio server), url= (a streamable-"
                              f"HTTP server) or config= (several servers); got {', '.join(given) or 'none'}.")
    if command:
        return [_stdio_spec("default", command, [], env, cwd)]
    if url:
        return [_http_spec("default", url, headers)]
    if isinstance(config, (str, os.PathLike)):
        path = Path(config)
        try:
            config = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise ToolConfigError(f"Cannot read the MCP configuration {str(path)!r}: {e}") from None
    if not isinstance(config, Mapping):
        raise ToolConfigError("config must be a mapping {'mcpServers': {name: {...}}} or a JSON file path.")
    servers = config.get("mcpServers", config)
    if not isinstance(servers, Mapping) or not servers:
        raise ToolConfigError("config names no servers: expected {'mcpServers': {name: {...}}}.")
    specs = []
    for name, entry in servers.items():
        if not isinstance(entry, Mapping):
            raise ToolConfigError(f"MCP server {name!r}: expected an object with 'command' or 'url'.")
        transport = entry.get("transport", "http" if entry.get("url") else "stdio")
        if transport in ("http", "streamable-http") and entry.get("url"):
            specs.append(_http_spec(str(name), entry["url"], entry.get("headers")))
        elif transport == "stdio" and entry.get("command"):
            specs.append(_stdio_spec(str(name), entry["command"], entry.get("args", []), entry.get("env"),
                                     entry.get("cwd")))
        else:
            raise ToolConfigError(f"MCP server {name!r}: give 'command' (stdio) or 'url' (streamable HTTP); "
                                  f"transport {transport!r} is not supported.")
    return specs


def _stdio_spec(name, command, args, env, cwd) -> ServerSpec:
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    argv += list(args or [])
    if not argv or not all(isinstance(a, str) for a in argv):
        raise ToolConfigError(f"MCP server {name!r}: the command must be a string or a list of strings.")
    return ServerSpec(name=name, command=tuple(argv), env=tuple(sorted((env or {}).items())),
                      cwd=str(cwd) if cwd else None)


def _http_spec(name, url, headers) -> ServerSpec:
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ToolConfigError(f"MCP server {name!r}: the url must start with http:// or https://, got {url!r}.")
    return ServerSpec(name=name, url=url, headers=tuple(sorted((headers or {}).items())))


def _mcp():
    try:
        import mcp
    except ImportError:
        raise MissingDependencyError("The MCP tool", "mcp", "tools") from None
    return mcp


class _ServerFailure(Exception):
    """A server that could not be reached or went away; the next call reconnects."""


class _CallRejected(Exception):
    """An error the server answered over a working connection."""


class _Connection:
    """One server's session, kept open by a task on the background loop."""

    def __init__(self, spec: ServerSpec, connect_timeout: float):
        self.spec = spec
        self.connect_timeout = connect_timeout
        self._client = None
        self._keeper: asyncio.Task | None = None
        self._stop: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        self._tools: list[Any] | None = None

    async def client(self):
        """The open session, connecting (again) if there is none."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._client is not None:
                return self._client
            ready: asyncio.Future = asyncio.get_running_loop().create_future()
            self._stop = asyncio.Event()
            self._keeper = asyncio.create_task(self._keep(ready, self._stop))
            try:
                client, self._tools = await asyncio.wait_for(_connected(ready), self.connect_timeout)
            except asyncio.TimeoutError:
                await self._shut_down()
                raise _ServerFailure(f"{self.spec.describe()} did not answer within {self.connect_timeout:g} "
                                     "seconds") from None
            except Exception as e:
                await self._shut_down()
                raise _ServerFailure(f"cannot connect to {self.spec.describe()}: {_reason(e)}") from None
            return client

    async def tools(self) -> list[Any]:
        await self.client()
        return list(self._tools or [])

    async def call(self, name: str, arguments: dict[str, Any], timeout: float):
        client = await self.client()
        try:
            return await asyncio.wait_for(client.call_tool(name, arguments), timeout)
        except asyncio.TimeoutError:
            raise
        except Exception as e:
            if _is_protocol_error(e):
                raise _CallRejected(f"{self.spec.describe()} rejected the call: {_reason(e)}") from None
            await self._shut_down()
            raise _ServerFailure(f"{self.spec.describe()} failed during the call ({_reason(e)}); "
                                 "the next call reconnects") from None

    async def close(self) -> None:
        await self._shut_down()

    async def _keep(self, ready: asyncio.Future, stop: asyncio.Event) -> None:
        client = None
        try:
            async with self.spec.client() as client:
                self._client = client
                ready.set_result(client)
                await stop.wait()
        except BaseException as e:  # anyio reports transport failures as exception groups
            if not ready.done():
                ready.set_exception(e if isinstance(e, Exception) else _ServerFailure(_reason(e)))
            if isinstance(e, asyncio.CancelledError):
                raise
        finally:
            if self._client is client:
                self._client = None

    async def _shut_down(self) -> None:
        """End the session (a stdio server is terminated); the next call reconnects."""
        keeper, stop = self._keeper, self._stop
        self._client, self._keeper, self._tools = None, None, None
        if stop is not None:
            stop.set()
        if keeper is not None:
            await asyncio.wait({keeper}, timeout=10)  # a stdio server gets a few seconds to exit
            if not keeper.done():
                keeper.cancel()


async def _connected(ready: asyncio.Future) -> tuple[Any, list[Any]]:
    client = await asyncio.shield(ready)
    return client, await _list_tools(client)


async def _list_tools(client) -> list[Any]:
    tools, cursor = [], None
    for _ in range(100):  # a server that pages forever cannot hang the connection
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _is_protocol_error(error: BaseException) -> bool:
    """An error the server sent over a working connection (not a lost connection)."""
    code = getattr(getattr(error, "error", None), "code", None)
    return type(error).__name__ == "MCPError" and code is not None and code != _CONNECTION_CLOSED


def _reason(error: BaseException) -> str:
    while isinstance(error, _EXCEPTION_GROUP) and error.exceptions:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


class _Pool:
    """Connections shared by every tool made with the same server settings, counted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[ServerSpec, list] = {}  # spec -> [connection, users]

    def acquire(self, spec: ServerSpec, connect_timeout: float) -> _Connection:
        with self._lock:
            entry = self._entries.get(spec)
            if entry is None:
                entry = self._entries[spec] = [_Connection(spec, connect_timeout), 0]
            entry[1] += 1
            return entry[0]

    def release(self, connection: _Connection) -> None:
        with self._lock:
            entry = self._entries.get(connection.spec)
            if entry is None or entry[0] is not connection:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del self._entries[connection.spec]
        _background().run(connection.close(), 30)

    def close_all(self) -> None:
        with self._lock:
            connections = [entry[0] for entry in self._entries.values()]
            self._entries.clear()
        for connection in connections:
            with contextlib.suppress(Exception):
                _background().run(connection.close(), 15)

    def forget(self) -> None:
        self._lock = threading.Lock()
        self._entries = {}


class _Background:
    """An event loop in a daemon thread, where every MCP connection lives."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="gem-mcp", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine, timeout: float):
        """Run ``coro`` on the loop and wait for it (from any thread but the loop's)."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"the MCP operation did not finish within {timeout:g} seconds") from None

    async def arun(self, coro: Coroutine):
        """Await ``coro`` running on the loop, from another event loop."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


_POOL = _Pool()
_background_lock = threading.Lock()
_background_loop: _Background | None = None


def _background() -> _Background:
    global _background_loop
    with _background_lock:
        if _background_loop is None:
            _background_loop = _Background()
        return _background_loop


def _shutdown() -> None:
    """At exit: end every session, so no stdio server outlives the interpreter."""
    if _background_loop is not None:
        _POOL.close_all()
        _background_loop.stop()


def _after_fork_in_child() -> None:
    global _background_loop, _background_lock
    _background_loop, _background_lock = None, threading.Lock()
    _POOL.forget()


atexit.register(_shutdown)
os.register_at_fork(after_in_child=_after_fork_in_child)

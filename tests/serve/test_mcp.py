"""``gem serve``'s ``/mcp`` as a JSON-RPC 2.0 peer sees it: the MCP methods, the tools of a
tool-wrapped environment (search and an MCP server's, beside ``step``) with the same steps as
in-process, OpenEnv's session methods, and every kind of bad request answered with an error
object while the session goes on."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

import gem_core
from gem_core.tools import actions
from gem_serve.server import EnvServer
from gem_core.tools import SAMPLE_CORPUS, ToolWrapper
from tests.serve.servers import in_thread

GAME = "game:GuessTheNumber-v0-easy"
MCP_SERVER = [sys.executable, str(Path(__file__).parents[1] / "tools" / "mcp_server.py")]


def tool_game():
    """A game whose agent has a search tool and an MCP server's tools."""
    return ToolWrapper(gem_core.make(GAME), tools=[("search", {"corpus": str(SAMPLE_CORPUS)}),
                                                   ("mcp", {"command": MCP_SERVER, "timeout": 30})])


class Peer:
    """JSON-RPC over POST /mcp."""

    def __init__(self, url: str, **headers: str):
        self.url, self.http, self.next_id = url, httpx.Client(base_url=url, timeout=60, headers=headers), 0

    def post(self, body, **headers) -> httpx.Response:
        content = body if isinstance(body, (str, bytes)) else json.dumps(body)
        return self.http.post("/mcp", content=content, headers=headers)

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        answer = self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert answer.status_code == 200
        body = answer.json()
        assert body["jsonrpc"] == "2.0" and body["id"] == self.next_id
        return body

    def result(self, method: str, **params) -> dict:
        body = self.call(method, **params)
        assert "result" in body, body
        return body["result"]

    def error(self, method: str, **params) -> dict:
        body = self.call(method, **params)
        assert "error" in body and "result" not in body, body
        return body["error"]

    def reset(self, session_id: str, seed: int) -> dict:
        """A reset on the session's WebSocket, as OpenEnv's MCPToolClient does it."""
        with connect(f"{self.url.replace('http', 'ws')}/ws?session_id={session_id}") as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
            return json.loads(ws.recv(timeout=60))


@pytest.fixture(scope="module")
def tools_server():
    server = EnvServer(tool_game, "test:ToolGame", max_sessions=3)
    with in_thread(server.app()) as url:
        yield server, Peer(url)


def test_initialize_and_ping():
    with in_thread(EnvServer(lambda: gem_core.make(GAME), GAME).app()) as url:
        peer = Peer(url)
        client = {"capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
        result = peer.result("initialize", protocolVersion="2025-06-18", **client)
        assert result["protocolVersion"] == "2025-06-18" and result["serverInfo"]["name"] == "gem-serve"
        # a plain MCP client's initialize starts an episode of its own: its first observation is the instructions
        assert result["capabilities"]["tools"] == {"listChanged": False} and "Guess The Number" in result["instructions"]
        assert peer.result("initialize", protocolVersion="1999-01-01", **client)["protocolVersion"] == "2025-11-25"
        assert peer.result("ping") == {}
        tools = peer.result("tools/list")["tools"]
        assert [tool["name"] for tool in tools] == ["step"]  # a plain game: its action tool only
        assert tools[0]["inputSchema"]["required"] == ["action"]


def test_tools_are_step_search_and_the_mcp_servers_with_in_process_steps(tools_server):
    server, peer = tools_server
    listed = {tool["name"]: tool for tool in peer.result("tools/list")["tools"]}
    assert list(listed) == ["step", "search", "add", "pid", "wait", "fail"]
    assert listed["add"]["inputSchema"]["required"] == ["a", "b"] and listed["add"]["description"] == "Add two integers."
    session = peer.result("openenv/session/create")["session_id"]
    first = peer.reset(session, seed=5)
    calls = [("search", {"query": "capital of France"}), ("add", {"a": 2, "b": 40}),
             ("fail", {"message": "on purpose"}), ("step", {"action": r"\boxed{3}"})]
    remote = [peer.result("tools/call", name=name, arguments=arguments, session_id=session) for name, arguments in calls]
    env = tool_game()
    try:
        assert first["data"]["observation"]["prompt"] == env.reset(seed=5)[0]
        local = [env.step(actions.action_text(env, name, arguments)) for name, arguments in calls]
    finally:
        env.close()
    for result, (observation, reward, terminated, truncated, info) in zip(remote, local):
        structured = result["structuredContent"]
        assert result["content"] == [{"type": "text", "text": observation}] and result["isError"] is False
        assert (structured["observation"], structured["reward"], structured["done"]) == \
               (observation, reward, terminated or truncated)
        assert structured["info"].get("tool_name") == info.get("tool_name")
    assert "<information>" in remote[0]["content"][0]["text"] and "42" in remote[1]["content"][0]["text"]
    assert remote[2]["structuredContent"]["info"]["tool_success"] is False  # the tool failed: an answer, not an error
    assert remote[3]["structuredContent"]["step_count"] == 4
    assert peer.result("openenv/session/close", session_id=session) == {"session_id": session, "closed": True}
    assert session not in server.sessions


def test_bad_requests_get_error_objects_and_the_session_goes_on(tools_server):
    server, peer = tools_server
    session = peer.result("openenv/session/create")["session_id"]
    try:
        outside = peer.error("tools/call", name="step", arguments={"action": "1"}, session_id=session)
        assert outside["code"] == -32600 and "reset first" in outside["message"]
        peer.reset(session, seed=1)
        for body, code in [("{nope", -32700), (b"\xff\xfe", -32700), ("[]", -32600), ('{"jsonrpc": "2.0", "id": 9}', -32600),
                           ('{"jsonrpc": "1.0", "id": 9, "method": "ping"}', -32600), ("{}", -32600)]:
            answer = peer.post(body)
            assert answer.status_code == 200 and answer.json()["jsonrpc"] == "2.0", body
            assert answer.json()["error"]["code"] == code and "id" in answer.json(), body
        assert peer.post({"jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202
        assert peer.error("resources/list")["code"] == -32601
        assert peer.error("tools/call", arguments={}, session_id=session)["code"] == -32602  # no name
        unknown = peer.error("tools/call", name="shell", arguments={}, session_id=session)
        assert unknown["code"] == -32602 and "Unknown tool 'shell'" in unknown["message"] and "search" in unknown["message"]
        misfit = peer.error("tools/call", name="search", arguments={"query": 3}, session_id=session)
        assert misfit["code"] == -32602 and "'query': a string" in misfit["message"]
        assert "needs \"session_id\"" in peer.error("tools/call", name="step", arguments={"action": "1"})["message"]
        assert "Unknown session_id" in peer.error("tools/call", name="step", arguments={"action": "1"},
                                                  session_id="nope")["message"]
        result = peer.result("tools/call", name="step", arguments={"action": r"\boxed{1}"}, session_id=session)
        assert result["structuredContent"]["step_count"] == 1  # none of the errors was a step
    finally:
        peer.result("openenv/session/close", session_id=session)


def test_sessions_opened_over_mcp_count_close_and_time_out():
    server = EnvServer(lambda: gem_core.make(GAME), GAME, max_sessions=2, session_timeout=1.0)
    with in_thread(server.app()) as url:
        peer = Peer(url)
        first, second = (peer.result("openenv/session/create")["session_id"] for _ in range(2))
        full = peer.error("openenv/session/create")
        assert "at capacity (2 sessions)" in full["message"] and "CAPACITY_REACHED" in full["message"]
        with connect(f"{url.replace('http', 'ws')}/ws?session_id={first}") as ws, \
                connect(f"{url.replace('http', 'ws')}/ws?session_id={first}") as again:
            again.send(json.dumps({"type": "state"}))
            assert "already has a WebSocket" in json.loads(again.recv(timeout=30))["data"]["message"]
            ws.send(json.dumps({"type": "reset", "data": {"seed": 2}}))
            assert json.loads(ws.recv(timeout=30))["type"] == "observation"
            peer.result("openenv/session/close", session_id=first)
            with pytest.raises(ConnectionClosed):  # the attached WebSocket is closed with the session
                ws.recv(timeout=30)
        with connect(f"{url.replace('http', 'ws')}/ws?session_id={first}") as gone:
            gone.send(json.dumps({"type": "state"}))
            reply = json.loads(gone.recv(timeout=30))
            assert reply["data"]["code"] == "SESSION_ERROR" and "Unknown session_id" in reply["data"]["message"]
        deadline = time.monotonic() + 20
        while second in server.sessions and time.monotonic() < deadline:  # idle: closed by the timeout
            time.sleep(0.1)
        assert not server.sessions
        assert "Unknown session_id" in peer.error("openenv/session/close", session_id=second)["message"]


def test_a_token_guards_mcp():
    server = EnvServer(lambda: gem_core.make(GAME), GAME, token="s3cret")
    with in_thread(server.app()) as url:
        assert Peer(url).post({"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 401
        assert Peer(url, Authorization="Bearer s3cret").result("ping") == {}

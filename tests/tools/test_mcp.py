"""The MCP tool against real servers started by the tests, over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import gem_core
from gem_core.registry import apply_wrappers
from gem_core.tools import MCPTool, ToolConfigError
from tests.helpers import free_port

from .conftest import FIXTURE_PIDS, wait_until_gone

SERVER = str(Path(__file__).with_name("mcp_server.py"))
STDIO = [sys.executable, SERVER]


def call(name: str, **arguments) -> str:
    return f"<tool_call><tool_name>{name}</tool_name><arguments>{json.dumps(arguments)}</arguments></tool_call>"


def server_pid(tool: MCPTool) -> int:
    output = tool.execute(tool.parse(call("pid")))
    assert output.success, output.observation
    return int(output.observation.split()[1])


@pytest.fixture(scope="module")
def stdio_tool():
    """One stdio server shared by the tests that leave it running."""
    tool = MCPTool(STDIO, timeout=10)
    pid = server_pid(tool)
    FIXTURE_PIDS.add(pid)
    yield tool
    tool.close()
    assert not wait_until_gone({pid}), "closing the tool must stop its stdio server"
    FIXTURE_PIDS.discard(pid)


def test_instructions_list_the_servers_tools(stdio_tool):
    text = stdio_tool.instructions()
    assert "<tool_call>" in text and "<tool_name>NAME</tool_name>" in text
    listed = [json.loads(line) for line in text.split("Available tools:\n", 1)[1].splitlines()]
    assert [t["function"]["name"] for t in listed] == ["add", "fail", "pid", "wait"]
    add = listed[0]["function"]
    assert add["description"] == "Add two integers."
    assert add["parameters"]["required"] == ["a", "b"]
    assert stdio_tool.tool_names() == ["add", "pid", "wait", "fail"]


def test_calls_in_both_formats(stdio_tool):
    output = stdio_tool.execute(stdio_tool.parse("Let me add. " + call("add", a=2, b=40)))
    assert output.success and output.observation == "\n<tool_response>\n42\n</tool_response>\n"
    hermes = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    assert "\n3\n" in stdio_tool.execute(stdio_tool.parse(hermes)).observation


@pytest.mark.parametrize("action, message", [
    (call("nope"), "unknown tool 'nope'; available tools: add, fail, pid, wait"),
    (call("fail", message="boom"), "tool error:"),
    (call("add", a="x", b=1), "tool error:"),
    ("<tool_call><tool_name>add</tool_name><arguments>{oops</arguments></tool_call>", "not valid JSON"),
    ("<tool_call>add 1 and 2</tool_call>", "expected <tool_name>"),
    ("<tool_call><tool_name>add</tool_name><arguments>[1, 2]</arguments></tool_call>", "JSON object"),
])
def test_bad_calls_are_failed_calls_with_a_reason(stdio_tool, action, message):
    output = stdio_tool.execute(stdio_tool.parse(action))
    assert not output.success
    assert message in output.observation
    assert output.observation.startswith("\n<tool_response>\n[")


def test_a_slow_call_times_out_and_the_connection_survives():
    with MCPTool(STDIO, timeout=1, env={"GEM_TEST": "timeout"}) as tool:
        output = tool.execute(tool.parse(call("wait", seconds=30)))
        assert not output.success and output.info["timed_out"]
        assert "timed out after 1 seconds" in output.observation
        assert tool.execute(tool.parse(call("add", a=1, b=1))).success


def test_async_calls_run_concurrently(stdio_tool):
    async def main():
        start = time.monotonic()
        outputs = await asyncio.gather(*[stdio_tool.aexecute(stdio_tool.parse(call("wait", seconds=1)))
                                         for _ in range(4)])
        return outputs, time.monotonic() - start

    outputs, elapsed = asyncio.run(main())
    assert all(o.success and "waited 1" in o.observation for o in outputs)
    assert elapsed < 3.0  # side by side, not 4 seconds in a row


def test_tools_with_the_same_server_share_one_connection(stdio_tool):
    with MCPTool(STDIO, timeout=10) as twin:
        assert server_pid(twin) == server_pid(stdio_tool)


def test_stdio_server_killed_mid_episode_is_restarted():
    env = gem_core.make("game:GuessTheNumber-v0-easy")
    tool = MCPTool(STDIO, timeout=10, env={"GEM_TEST": "restart"})
    env = apply_wrappers(env, [("tool", {"tools": [tool], "max_tool_uses": 10})])
    try:
        observation, _ = env.reset(seed=1)
        assert observation.count("Available tools:") == 1 and '"name": "add"' in observation
        first = server_pid(tool)
        os.kill(first, signal.SIGKILL)
        observation, reward, terminated, truncated, info = env.step(call("add", a=1, b=2))
        assert info["use_tool"] and not info["tool_success"] and info["tool_info"]["server_failed"]
        assert "the next call reconnects" in observation
        assert not terminated and not truncated
        observation, _, _, _, info = env.step(call("add", a=1, b=2))
        assert info["tool_success"] and "\n3\n" in observation
        second = server_pid(tool)
        assert second != first
    finally:
        env.close()
        tool.close()


def test_stdio_server_dying_during_a_call_answers_at_once():
    with MCPTool(STDIO, timeout=30, env={"GEM_TEST": "mid-call"}) as tool:
        pid = server_pid(tool)
        threading.Timer(1.0, os.kill, (pid, signal.SIGKILL)).start()
        start = time.monotonic()
        output = tool.execute(tool.parse(call("wait", seconds=20)))
        assert not output.success and output.info["server_failed"]
        assert time.monotonic() - start < 10  # not the 20-second wait, nor the 30-second timeout
        assert tool.execute(tool.parse(call("add", a=2, b=2))).success


# --- streamable HTTP --------------------------------------------------------------------------


class HttpServer:
    def __init__(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process: subprocess.Popen | None = None

    def start(self):
        self.process = subprocess.Popen([sys.executable, SERVER, "http", str(self.port)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                assert self.process.poll() is None and time.monotonic() < deadline, "server did not start"
                time.sleep(0.1)

    def kill(self):
        if self.process is not None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def http_server():
    server = HttpServer()
    server.start()
    yield server
    server.kill()


def test_http_server(http_server):
    with MCPTool(url=http_server.url, timeout=10) as tool:
        assert "add" in tool.tool_names()
        output = tool.execute(tool.parse(call("add", a=20, b=22)))
        assert output.success and "\n42\n" in output.observation
        assert server_pid(tool) == http_server.process.pid
    with MCPTool(url=http_server.url, headers={"Authorization": "Bearer test-token"}, timeout=10) as tool:
        assert "\n5\n" in tool.execute(tool.parse(call("add", a=2, b=3))).observation


def test_http_server_killed_mid_episode_then_back(http_server):
    with MCPTool(url=http_server.url, timeout=5, connect_timeout=5) as tool:
        env = apply_wrappers(gem_core.make("game:GuessTheNumber-v0-easy"), [("tool", {"tools": [tool]})])
        env.reset(seed=0)
        assert env.step(call("add", a=1, b=1))[4]["tool_success"]
        http_server.kill()
        observation, _, _, _, info = env.step(call("add", a=1, b=1))
        assert not info["tool_success"] and "MCP server" in observation
        observation, _, _, _, info = env.step(call("add", a=1, b=1))  # still down: a clear error again
        assert not info["tool_success"] and "cannot connect" in observation
        http_server.start()
        observation, _, _, _, info = env.step(call("add", a=5, b=5))
        assert info["tool_success"] and "\n10\n" in observation
        assert env.reset(seed=1)[0]  # instructions still build
        env.close()


def test_several_servers_from_a_config_file(tmp_path, http_server):
    config = {"mcpServers": {
        "local": {"command": sys.executable, "args": [SERVER], "env": {"GEM_TEST": "config"}},
        "remote": {"url": http_server.url},
    }}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    with MCPTool(config=path, timeout=10) as tool:
        names = tool.tool_names()
        assert "local_add" in names and "remote_add" in names and "add" not in names
        assert "\n7\n" in tool.execute(tool.parse(call("remote_add", a=3, b=4))).observation
        assert "\n9\n" in tool.execute(tool.parse(call("local_add", a=4, b=5))).observation
        assert "remote_wait" in tool.instructions()


@pytest.mark.parametrize("kwargs, message", [
    ({}, "exactly one of"),
    ({"command": "x", "url": "http://127.0.0.1:1/mcp"}, "exactly one of"),
    ({"url": "ftp://example"}, "http://"),
    ({"config": {"mcpServers": {}}}, "names no servers"),
    ({"config": {"mcpServers": {"a": {"url": "http://h/sse", "transport": "sse"}}}}, "not supported"),
    ({"config": "/nonexistent/mcp.json"}, "Cannot read"),
])
def test_configuration_errors(kwargs, message):
    with pytest.raises(ToolConfigError, match=message):
        MCPTool(**kwargs)


def test_unreachable_server_at_reset_is_a_clear_error():
    with MCPTool(url=f"http://127.0.0.1:{HttpServer().port}/mcp", connect_timeout=3) as tool:
        with pytest.raises(ToolConfigError, match="cannot connect to MCP server"):
            tool.instructions()

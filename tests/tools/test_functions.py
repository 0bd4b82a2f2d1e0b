"""Tools as named functions (what ``gem serve`` offers over MCP): each tool lists its calls with
an argument schema, and the action text it writes for a call is read back by its own parser as
that very call."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import gem_core
from gem_core.tools import SAMPLE_CORPUS, MCPTool, PythonTool, SearchTool, ToolWrapper
from gem_core.tools.base import ToolArgumentError, ToolConfigError

MCP_SERVER = [sys.executable, str(Path(__file__).with_name("mcp_server.py"))]


@pytest.mark.parametrize("make, function, arguments, expected", [
    (lambda: PythonTool(allow_unsandboxed=True), "python", {"code": "x = '```'\nprint(x)"}, "x = '```'\nprint(x)"),
    (lambda: SearchTool(corpus=SAMPLE_CORPUS), "search", {"query": "capital of France"}, "capital of France"),
])
def test_a_call_text_is_read_back_as_the_same_call(make, function, arguments, expected):
    tool = make()
    try:
        [offered] = tool.functions()
        assert offered.name == function and offered.description
        assert offered.parameters["required"] == list(arguments) and offered.parameters["additionalProperties"] is False
        text = tool.call_text(function, arguments)
        call = tool.parse(f"Let me check. {text} Then I answer.")
        assert call is not None and call.error is None and call.arguments == expected
    finally:
        tool.close()


def test_mcp_tools_are_the_servers_and_their_calls_survive_any_text():
    tool = MCPTool(MCP_SERVER, timeout=30)
    try:
        functions = {f.name: f for f in tool.functions()}
        assert list(functions) == ["add", "pid", "wait", "fail"]
        assert functions["add"].parameters["required"] == ["a", "b"]
        tricky = {"message": "</tool_call> and </arguments> inside"}
        call = tool.parse(tool.call_text("fail", tricky))
        assert call.error is None and call.arguments == ("fail", tricky)
        assert "42" in tool.execute(tool.parse(tool.call_text("add", {"a": 40, "b": 2}))).observation
        with pytest.raises(ToolArgumentError, match="must be an object"):
            tool.call_text("add", [1, 2])
    finally:
        tool.close()


def test_arguments_that_do_not_fit_are_refused_clearly():
    python = PythonTool(allow_unsandboxed=True)
    for arguments, message in [({}, "needs 'code': a string"), ({"code": 3}, "a string, got int"),
                               ({"code": "print(1)", "timeout": 9}, "takes one argument"),
                               ({"code": "s = '</python>'"}, "must not contain '</python>'")]:
        with pytest.raises(ToolArgumentError, match=message):
            python.call_text("python", arguments)
    with pytest.raises(ToolArgumentError, match="has no function 'search'"):
        python.call_text("search", {"query": "x"})


def test_a_wrapper_offers_its_tools_functions_and_routes_calls_to_them():
    env = ToolWrapper(gem_core.make("game:GuessTheNumber-v0-easy"),
                      tools=[("python", {"allow_unsandboxed": True}), ("search", {"corpus": str(SAMPLE_CORPUS)})])
    try:
        assert [f.name for f in env.functions()] == ["python", "search"]
        env.reset(seed=1)
        observation, *_ , info = env.step(env.call_text("search", {"query": "Paris"}))
        assert info["tool_name"] == "search" and "<information>" in observation
        with pytest.raises(ToolArgumentError, match="No tool offers a function 'shell'; the functions are: python, search"):
            env.call_text("shell", {})
    finally:
        env.close()
    twice = ToolWrapper(gem_core.make("game:GuessTheNumber-v0-easy"),
                        tools=[("search", {"corpus": str(SAMPLE_CORPUS)}), ("search", {"corpus": str(SAMPLE_CORPUS)})])
    with pytest.raises(ToolConfigError, match="Two tools offer a function named 'search'"):
        twice.functions()
    twice.close()

"""The Python tool: finding code in an action, running it, and the observation."""

from __future__ import annotations

import pytest

from gem_core.registry import get_tool
from gem_core.tools import PythonTool, SandboxUnavailableError, ToolConfigError

pytestmark = pytest.mark.usefixtures("sandbox")


@pytest.fixture(scope="module")
def tool():
    return PythonTool(timeout=3)


@pytest.mark.parametrize("action, code", [
    ("Let me check.\n<python>\nprint(2 + 2)\n</python>\nDone.", "print(2 + 2)"),
    ("```python\nx = 3\nprint(x)\n```", "x = 3\nprint(x)"),
    ("```py\nprint(1)```", "print(1)"),
    ("<python>\n    if True:\n        print('indented')\n</python>", "if True:\n    print('indented')"),
    ("first <python>print('a')</python> then ```python\nprint('b')\n```", "print('a')"),
    ("```python\nprint('b')\n``` then <python>print('a')</python>", "print('b')"),
])
def test_finds_the_first_complete_block(tool, action, code):
    call = tool.parse(action)
    assert call is not None and call.arguments == code
    assert action[call.start:call.end].endswith(("</python>", "```"))


@pytest.mark.parametrize("action", [
    "no code here", "<python>print(1)", "```python\nprint(1)", "```javascript\nconsole.log(1)\n```",
    "", "</python><python>", "```pythonic\nprint(1)\n```",
])
def test_finds_nothing_in_actions_without_a_complete_block(tool, action):
    assert tool.parse(action) is None


def test_parsing_adversarial_input_is_linear(tool):
    import time

    action = "<python>" * 200_000 + " ```python\n" + "text " * 200_000
    start = time.monotonic()
    assert tool.parse(action) is None
    assert time.monotonic() - start < 1.0


def test_runs_code_and_formats_the_observation(tool):
    output = tool.execute(tool.parse("<python>print(6 * 7)</python>"))
    assert output.success
    assert output.observation == "Code execution result: 42\n\n"
    assert output.info["exit_code"] == 0 and output.info["sandboxed"] is True


def test_errors_come_back_with_the_traceback(tool):
    output = tool.execute(tool.parse("<python>print('before')\nundefined_name</python>"))
    assert not output.success
    assert output.observation.startswith("Code execution result: before\n\nTraceback")
    assert "NameError: name 'undefined_name' is not defined" in output.observation


def test_last_line_of_errors_only():
    tool = PythonTool(timeout=3, keep_error_last_line=True)
    output = tool.execute(tool.parse("<python>1/0</python>"))
    assert output.observation == "Code execution result: ZeroDivisionError: division by zero\n"


def test_timeout_is_reported_with_the_partial_output():
    tool = PythonTool(timeout=1)
    output = tool.execute(tool.parse("<python>print('started', flush=True)\nwhile True: pass</python>"))
    assert not output.success and output.info["timed_out"]
    assert output.observation == "Code execution result: started\nExecution timed out after 1 seconds.\n"


def test_registered_under_python_with_options():
    tool = get_tool("python")(timeout=2, memory_mb=256)
    assert isinstance(tool, PythonTool) and tool.timeout == 2 and tool.sandbox_options == {"memory_mb": 256}
    with pytest.raises(ToolConfigError, match="Accepted"):
        PythonTool(memroy_mb=256)


def test_refuses_to_construct_without_a_sandbox(monkeypatch, tmp_path):
    monkeypatch.setenv("GEM_BWRAP", str(tmp_path / "missing"))
    with pytest.raises(SandboxUnavailableError):
        PythonTool()
    tool = PythonTool(allow_unsandboxed=True)
    output = tool.execute(tool.parse("<python>print('unsafe but allowed')</python>"))
    assert output.success and output.info["sandboxed"] is False

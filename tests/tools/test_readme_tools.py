"""The example of the Tools page (docs/tools.md) runs as written."""

import pytest

from tests.helpers import python_blocks, run_python


@pytest.mark.usefixtures("sandbox")
def test_tools_example_runs():
    block = next(b for b in python_blocks("docs/tools.md") if "run_python(" in b)
    result = run_python(block)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "45" and lines[1] == " 0 False True"
    assert "Code execution result: 1024" in result.stdout

"""The README's Tools example runs as written."""

import re

import pytest

from tests.helpers import REPO, run_python


@pytest.mark.usefixtures("sandbox")
def test_tools_example_runs():
    text = (REPO / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "run_python(" in b)
    result = run_python(block)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "45" and lines[1] == " 0 False True"
    assert "Code execution result: 1024" in result.stdout

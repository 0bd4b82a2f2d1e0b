"""The README's vector-environment example runs as written."""

import re

from tests.helpers import REPO, run_python


def test_vector_example_runs():
    text = (REPO / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "make_vec(" in b)
    result = run_python(block + "\nprint(len(episodes), all(e.done for e in episodes), vec.num_envs)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["64", "True", "16"]

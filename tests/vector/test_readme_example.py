"""The vector-environment example of docs/wrappers-and-vector-envs.md runs as written."""

from tests.helpers import python_blocks, run_python


def test_vector_example_runs():
    block = next(b for b in python_blocks("docs/wrappers-and-vector-envs.md") if "make_vec(" in b)
    result = run_python(block + "\nprint(len(episodes), all(e.done for e in episodes), vec.num_envs)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["64", "True", "16"]

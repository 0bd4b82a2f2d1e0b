"""The examples of docs/rewards.md run as written: the rubric of functions prints what its comment
says, and the judge example runs against the real server in place of localhost:8000."""

from __future__ import annotations

from tests.helpers import python_blocks, run_python

PAGE = "docs/rewards.md"


def test_the_rubric_example_prints_what_it_says():
    block = next(b for b in python_blocks(PAGE) if "RubricWrapper(" in b)
    printed = block.rsplit("# ", 1)[1].strip()
    result = run_python(block)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == printed


def test_the_judge_example_runs_against_a_real_server(smollm2_server):
    block = next(b for b in python_blocks(PAGE) if "from gem_core.rubrics import judge" in b)
    assert "http://localhost:8000/v1" in block
    result = run_python(block.replace("http://localhost:8000/v1", smollm2_server.base_url),
                        env={"model": smollm2_server.model}, timeout=600)
    assert result.returncode == 0, result.stderr
    _, fault, part = result.stdout.strip().split(" ", 2)  # the reward, the fault flag, the judge's part
    assert fault in ("True", "False") and "'weight': 1.0" in part and "'text': " in part

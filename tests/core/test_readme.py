"""The Python examples of the README and the documentation pages run as written."""

import pytest

from tests.helpers import REPO, doc_pages, python_blocks, run_python


def blocks_with(text: str) -> list[pytest.param]:
    """Every Python block of README.md and docs/**/*.md that contains ``text``, with its page as id."""
    found = [pytest.param(block, id=str(page.relative_to(REPO)))
             for page in doc_pages() for block in python_blocks(str(page.relative_to(REPO))) if text in block]
    assert found, f"no Python block with {text!r} in README.md or docs/"
    return found


@pytest.mark.parametrize("block", blocks_with('gem_core.make("game:GuessTheNumber-v0-easy")\nobservation, info = env.reset('))
def test_env_api_example_runs(block):
    result = run_python(block + "\nprint('ok', reward)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok")


def test_the_readme_shows_the_env_api_example():
    assert any(b.startswith("import gem_core") and "gem_core.make(" in b for b in python_blocks("README.md"))


@pytest.mark.parametrize("block", blocks_with("class ReverseWord"))
def test_writing_an_env_example_runs(block):
    result = run_python(block + '''
import gem_core
env = gem_core.make("mypack:ReverseWord-v0")
obs, _ = env.reset(seed=0)
assert "garden" in obs, obs
assert env.step("\\\\boxed{nedrag}")[1] == 1.0
env.reset()
assert env.step(env.sample_random_action())[2] is True
assert {r.status for r in gem_core.check_env("mypack:ReverseWord-v0", steps=10)} == {"passed"}
assert {r.status for r in gem_core.check_env(ReverseWord, steps=10)} == {"passed"}
print("ok")
''')
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"

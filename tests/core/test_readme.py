"""The README's Python examples run as written."""

import re

from tests.helpers import REPO, run_python


def python_blocks():
    text = (REPO / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_env_api_example_runs():
    block = next(b for b in python_blocks() if "gem_core.make(" in b)
    result = run_python(block + "\nprint('ok', reward)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok")


def test_writing_an_env_example_runs():
    block = next(b for b in python_blocks() if "class ReverseWord" in b)
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

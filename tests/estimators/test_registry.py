import inspect
import json

import numpy as np
import pytest

import gem_core
from gem_core.estimators import EstimatorInputError, estimate_flat
from tests.helpers import gem_command, run_python

NAMES = ["rebn", "reinforce", "reinforce_baseline", "grpo", "drgrpo", "rloo"]


@pytest.mark.parametrize("name", NAMES)
def test_every_estimator_is_registered_with_the_shared_signature(name):
    estimator = gem_core.get_estimator(name)
    parameters = inspect.signature(estimator).parameters
    assert list(parameters)[:3] == ["rewards", "gamma", "group_ids"]
    assert parameters["gamma"].kind is inspect.Parameter.KEYWORD_ONLY and parameters["group_ids"].default is None
    got = estimator([[0.0, 1.0], [1.0], [0.5], [0.0]], gamma=0.9, group_ids=[0, 0, 1, 1])
    assert [a.shape for a in got] == [(2,), (1,), (1,), (1,)] and all(a.dtype == np.float64 for a in got)
    flat = estimate_flat(name, [0.0, 1.0, 1.0, 0.5, 0.0], [2, 1, 1, 1], gamma=0.9, group_ids=[0, 0, 1, 1])
    assert np.array_equal(flat, np.concatenate(got))


def test_the_core_plugin_registers_them():
    result = gem_command("plugins", "--json")
    core = next(p for p in json.loads(result.stdout) if p["name"] == "core")
    assert sorted(core["registered"]["estimators"]) == sorted(NAMES) and core["ok"]


def test_imports_stay_light():
    result = run_python("""
        import sys
        import gem_core
        assert "numpy" not in sys.modules, "import gem_core imported numpy"
        rebn = gem_core.get_estimator("rebn")
        rebn([[1.0], [0.0]], gamma=1.0)
        heavy = [m for m in ("torch", "transformers", "datasets") if m in sys.modules]
        assert not heavy, heavy
        print("ok")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_estimate_flat_calls_estimators_without_a_flat_form():
    seen = {}

    def per_episode_mean(rewards, *, gamma, group_ids=None, shift=0.0):
        seen["rewards"] = [list(e) for e in rewards]
        return [np.full(len(e), np.mean(e) + shift) for e in rewards]

    got = estimate_flat(per_episode_mean, np.array([1.0, 3.0, 5.0]), [2, 1], gamma=1.0, shift=1.0)
    assert got.tolist() == [3.0, 3.0, 6.0] and seen["rewards"] == [[1.0, 3.0], [5.0]]


@pytest.mark.parametrize("result, message", [
    ([np.zeros(2)], "one array of per-turn advantages per episode .2 episodes.; it returned 1 arrays"),
    ([np.zeros(2), np.zeros(2)], "of the wrong lengths"),
    ([np.zeros(2), [float("nan")]], "non-finite advantage"),
    (["a", "b"], "did not return numeric arrays"),
])
def test_estimate_flat_rejects_broken_estimators(result, message):
    def broken(rewards, *, gamma, group_ids=None):
        return result

    with pytest.raises(EstimatorInputError, match=message):
        estimate_flat(broken, [1.0, 2.0, 3.0], [2, 1], gamma=1.0)


def test_documented_example_runs():
    from tests.helpers import python_blocks

    block = next(b for b in python_blocks("docs/estimators.md") if 'get_estimator("rebn")' in b)
    result = run_python(block + "\nprint([a.round(3).tolist() for a in advantages])")
    assert result.returncode == 0, result.stderr
    # group seed0 returns 1 and 1: zeros; group seed1 returns 0 and 1: -1 and 1 (up to eps)
    assert result.stdout.strip() == "[[0.0, 0.0, 0.0], [0.0, 0.0], [-1.0], [1.0]]"

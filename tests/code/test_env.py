"""The code environments end to end on fixtures of every dataset, and on HumanEval."""

from __future__ import annotations

import asyncio

import pytest

import gem_core
from gem_core.errors import DataNotFoundError, GemError
from gem_envs.code import plugin
from gem_envs.code.env import Reward

from .conftest import DATASET_FIXTURES, FIXTURES, SOLUTIONS, fenced

INFO_KEYS = {"index", "problem_id", "tests_total", "tests_passed", "tests_failed", "tests_timed_out",
             "correct", "format_error", "sandboxed"}


def make(env_id, **kwargs):
    return gem_core.make(env_id, dataset_name=str(FIXTURES / DATASET_FIXTURES[env_id]), **kwargs)


def test_every_dataset_id_has_a_fixture():
    assert set(plugin.DATASETS) == set(DATASET_FIXTURES) == set(SOLUTIONS)
    assert all(not gem_core.spec(env_id).offline for env_id in plugin.DATASETS)
    assert gem_core.spec("eval:HumanEval").offline


@pytest.mark.parametrize("env_id", sorted(DATASET_FIXTURES))
def test_correct_solutions_pass_and_wrong_ones_fail(env_id):
    env = make(env_id)
    assert len(env) == len(SOLUTIONS[env_id])
    for index, program in enumerate(SOLUTIONS[env_id]):
        observation, info = env.reset(index=index)
        assert observation == env.problem.prompt and info["tests_total"] == len(env.problem.tests)
        observation, reward, terminated, truncated, info = env.step(fenced(program))
        assert (reward, terminated, truncated) == (Reward.PASS, True, False), observation
        assert info.keys() == INFO_KEYS and info["correct"] and info["sandboxed"]
        assert info["tests_passed"] == info["tests_total"] and observation.startswith("All ")
        env.reset(index=index)
        wrong = program.replace("+", "-").replace("sorted(", "list(").replace("upper", "lower")
        wrong = wrong.replace("print(a)", "print(a + 1)").replace("'YES' if", "'NO' if")
        wrong = wrong.replace("print(best)", "print(best + 1)").replace("sum(sieve)", "sum(sieve) + 1")
        wrong = wrong.replace("reversed(", "list(").replace("a * b", "a + b")
        _, reward, _, _, info = env.step(fenced(wrong))
        assert reward == Reward.FAIL and not info["correct"], wrong
        assert info["tests_passed"] < info["tests_total"]


def test_no_code_gets_the_format_penalty():
    env = make("code:CodeContest")
    env.reset(seed=0)
    observation, reward, terminated, _, info = env.step("I would loop over the input and add.")
    assert (reward, terminated, info["format_error"], info["tests_passed"]) == (Reward.FORMAT_ERROR, True, True, 0)
    assert "```python" in observation
    env.reset(seed=0)
    assert env.step(fenced("print(3)", "cpp"))[4]["format_error"]


def test_outcome_counts_in_info():
    env = make("code:CodeContest", per_test_timeout=0.5)
    env.reset(index=0)  # a + b, three tests
    program = "a, b = map(int, input().split())\nif a < 0:\n    while True: pass\nprint(a + b if a < 10 else 0)"
    observation, reward, _, _, info = env.step(fenced(program))
    assert (info["tests_passed"], info["tests_failed"], info["tests_timed_out"]) == (1, 1, 1)
    assert reward == 0.0 and "1 of 3 tests passed, 1 timed out" in observation


@pytest.mark.parametrize("action", ["", "```", "```python\n" * 1000, "\x00\udcff" * 100,
                                    "```python\nimport os\nos.system('rm -rf /')\n```"])
def test_any_action_gives_a_valid_transition(action):
    env = make("code:Taco8k")
    env.reset(seed=4)
    observation, reward, terminated, truncated, _ = env.step(action)
    assert isinstance(observation, str) and reward in (Reward.PASS, Reward.FAIL, Reward.FORMAT_ERROR)
    assert terminated and not truncated


def test_random_actions_are_well_formed():
    for env_id in sorted(DATASET_FIXTURES):
        env = make(env_id)
        for index in range(len(env)):
            env.reset(index=index)
            assert not env.step(env.sample_random_action())[4]["format_error"]


def test_astep_matches_step():
    env = make("code:Taco8k")

    async def episode(index, action):
        env.reset(index=index)
        return await env.astep(action)

    for index, program in enumerate(SOLUTIONS["code:Taco8k"]):
        assert asyncio.run(episode(index, fenced(program)))[1] == Reward.PASS
    assert asyncio.run(episode(0, fenced("print(1)")))[1] == Reward.FAIL
    assert asyncio.run(episode(0, "no code"))[1] == Reward.FORMAT_ERROR


def test_seeds_clones_and_passes():
    env = make("code:CodeContest")
    first = env.reset(seed=11)[1]["index"]
    assert make("code:CodeContest").reset(seed=11)[1]["index"] == first
    seen = [first] + [env.reset()[1]["index"] for _ in range(len(env) - 1)]
    assert sorted(seen) == list(range(len(env)))
    env.reset(seed=5)
    twin = env.clone()
    assert twin.problem == env.problem
    assert env.step(fenced(SOLUTIONS["code:CodeContest"][env.index]))[1] == Reward.PASS
    assert twin.step("nothing")[1] == Reward.FORMAT_ERROR  # the twin's episode was still open
    assert [env.reset()[1]["index"] for _ in range(5)] == [twin.reset()[1]["index"] for _ in range(5)]


def test_misuse_is_a_clear_error():
    env = make("code:CodeContest")
    with pytest.raises(GemError, match="reset"):
        env.step(fenced("print(1)"))
    with pytest.raises(GemError, match="out of range"):
        env.reset(index=10)
    with pytest.raises(GemError, match="positive"):
        make("code:CodeContest", total_timeout=0)
    with pytest.raises(GemError, match="max_tests"):
        make("code:CodeContest", max_tests=0)
    with pytest.raises(GemError, match="'question'.*columns are 'problem', 'tests'"):
        make("code:CodeContest", question_key="question")


def test_malformed_tests_are_reported_with_their_row(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"problem": "p", "tests": "{broken"}\n')
    env = gem_core.make("code:CodeContest", data_path=str(tmp_path / "bad.jsonl"))
    with pytest.raises(GemError, match="row 0 of code:CodeContest"):
        env.reset(seed=0)


def test_missing_data_says_how_to_get_it():
    with pytest.raises(DataNotFoundError) as caught:
        gem_core.make("code:Taco8k")
    assert "axon-rl/TACO-8k" in str(caught.value) and "data_path=" in str(caught.value)


def test_max_tests_limits_the_tests_run():
    env = make("code:CodeContest", max_tests=1)
    env.reset(index=0)
    assert len(env.problem.tests) == 1 and env.problem.tests[0].input.startswith("1000000000")


def test_async_vector_environment_runs_submissions_concurrently():
    solutions = dict(enumerate(SOLUTIONS["code:CodeContest"]))
    factory = lambda: make("code:CodeContest")  # noqa: E731
    with gem_core.make_vec([factory] * 4, mode="async", seed=0) as vec:
        vec.reset()
        indices = [env.index for env in vec.envs]
        _, rewards, terminated, _, infos = vec.step([fenced(solutions[i]) for i in indices])
    assert list(rewards) == [Reward.PASS] * 4 and all(terminated)
    assert all(info["sandboxed"] for info in infos)

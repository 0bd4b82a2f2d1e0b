"""The math environments: episodes, seeding, rewards and info, generated problems."""

import asyncio

import pytest

import gem_core
from gem_core.errors import GemError
from gem_envs.math.plugin import GENERATED_SETS
from tests.helpers import assert_single_answer_misuse_is_clear, make_without

ROWS = [{"problem": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(20)]


def make(**kwargs):
    return gem_core.make("math:Math12K", dataset=ROWS, **kwargs)


def test_one_step_episode_with_rewards_and_info():
    env = make()
    observation, info = env.reset(seed=3)
    index = info["index"]
    assert observation == f"What is {index} + {index}?\n\nPlease reason step by step, and put your final answer within \\boxed{{}}."
    observation, reward, terminated, truncated, info = env.step(f"... \\boxed{{{2 * index}}}")
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info == {"correct": True, "answer": str(2 * index), "format_error": False, "timed_out": False}
    env.reset(seed=3)
    assert env.step("\\boxed{-1}")[1:4] == (0.0, True, False)
    env.reset(seed=3)
    observation, reward, _, _, info = env.step("I think it is 6.")
    assert reward == 0.0 and info["format_error"] and "\\boxed{}" in observation


def test_same_seed_same_episode_and_reset_continues_without_seed():
    env, other = make(), make()
    assert env.reset(seed=11) == other.reset(seed=11)
    sequence = [env.reset()[1]["index"] for _ in range(10)]
    assert sequence == [other.reset()[1]["index"] for _ in range(10)]
    assert len(set(sequence)) > 1
    assert {make().reset(seed=s)[1]["index"] for s in range(30)} != {env.reset(seed=0)[1]["index"]}


def test_unshuffled_environments_go_in_order_and_seed_picks_the_start():
    env = make(shuffle=False)
    assert [env.reset()[1]["index"] for _ in range(3)] == [0, 1, 2]
    assert env.reset(seed=25)[1]["index"] == 5
    assert env.reset()[1]["index"] == 6
    assert env.reset(index=19)[1]["index"] == 19 and env.reset()[1]["index"] == 0
    assert gem_core.spec("eval:AIME24").kwargs["shuffle"] is False


def test_instruction_can_be_replaced_or_dropped():
    assert make(instruction="").reset(index=1)[0] == "What is 1 + 1?"
    assert make(instruction="Answer in a box.").reset(index=1)[0].endswith("\n\nAnswer in a box.")


def test_clone_continues_identically_and_independently():
    env = make()
    env.reset(seed=5)
    clone = env.clone()
    assert clone.answers == env.answers and clone.problems is env.problems
    assert clone.step(f"\\boxed{{{env.answers[0]}}}")[1] == 1.0
    assert env.step("\\boxed{-1}")[1] == 0.0  # the original's episode was untouched
    assert [env.reset()[0] for _ in range(5)] == [clone.reset()[0] for _ in range(5)]


def test_async_step_grades_like_step():
    env = make()

    async def episode(seed, correct):
        await env.areset(seed=seed)
        answer = env.answers[0] if correct else "0.5"
        return (await env.astep(f"\\boxed{{{answer}}}"))[1]

    assert asyncio.run(episode(1, True)) == 1.0
    assert asyncio.run(episode(1, False)) == 0.0


def test_a_timed_out_grading_scores_zero_and_says_so():
    env = make(time_limit=0.5)
    env.reset(index=1)
    _, reward, terminated, _, info = env.step("\\boxed{(x+1)^{100000}-x^{100000}}")
    assert reward == 0.0 and terminated and info["timed_out"]


@pytest.mark.parametrize("action", ["", "\\boxed{", "}" * 10_000, "\\boxed{" * 50_000, "\x00\udcff"])
def test_any_text_is_a_valid_action(action):
    env = make()
    env.reset(seed=0)
    _, reward, terminated, _, _ = env.step(action)
    assert reward == 0.0 and terminated


def test_misuse_raises_clear_errors():
    env = make()
    assert_single_answer_misuse_is_clear(env, "\\boxed{1}")
    with pytest.raises(GemError, match=r"index=20 is out of range: there are 20 rows \(0 to 19\)"):
        env.reset(index=20)
    with pytest.raises(GemError, match="time_limit"):
        make(time_limit=0)
    with pytest.raises(gem_core.EnvArgumentError, match="dataset_name"):
        gem_core.make("math:GSM8K", use_mp=True)


def test_random_actions_are_well_formed():
    env = make()
    env.reset(seed=0)
    _, _, _, _, info = env.step(env.sample_random_action())
    assert not info["format_error"]


@pytest.mark.parametrize("env_id", sorted(GENERATED_SETS))
def test_generated_problems_work_offline(env_id):
    spec = gem_core.spec(env_id)
    assert spec.offline
    env = gem_core.make(env_id, size=50)
    observation, info = env.reset(seed=7)
    assert env.reset(seed=7) == (observation, info)
    assert env.step(f"\\boxed{{{env.answers[0]}}}")[1] == 1.0
    env.reset(seed=7)
    assert env.step("\\boxed{-123456789}")[1] == 0.0


def test_generated_problems_take_reasoning_gym_options():
    env = gem_core.make("math:Arithmetic-v0", config={"min_terms": 2, "max_terms": 2, "min_digits": 1,
                                                      "max_digits": 1})
    assert len(env.reset(seed=0)[0].split("\n")[0]) < 40
    with pytest.raises(GemError, match="no option 'digits'"):
        gem_core.make("math:Arithmetic-v0", config={"digits": 3})


def test_without_math_verify_make_names_the_install_command():
    done = make_without("math_verify", "math:Arithmetic-v0")
    assert "pip install 'gem-adapters[envs]'" in done.stdout, done.stderr

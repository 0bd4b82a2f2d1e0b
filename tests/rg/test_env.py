"""ReasoningGym environments: seeding, options, mixing, and answers that attack the scorer."""

import asyncio
import time
from pathlib import Path

import pytest

import gem_core
from gem_core.errors import GemError, UnknownNameError
from gem_core.sandbox.worker_pool import sandboxed
from gem_envs.rg.env import scoring_pool
from tests.helpers import assert_single_answer_misuse_is_clear


def test_same_seed_same_problem_and_reset_continues():
    env, other = gem_core.make("rg:basic_arithmetic"), gem_core.make("rg:basic_arithmetic")
    assert env.reset(seed=4) == other.reset(seed=4)
    assert [env.reset()[0] for _ in range(5)] == [other.reset()[0] for _ in range(5)]
    assert len({env.reset(seed=s)[0] for s in range(10)}) > 1


def test_dataset_seed_and_size_choose_the_problems():
    small = gem_core.make("rg:basic_arithmetic", size=3)
    assert {small.reset()[1]["index"] for _ in range(30)} == {0, 1, 2}
    a = gem_core.make("rg:basic_arithmetic", seed=1).reset(index=0)[0]
    b = gem_core.make("rg:basic_arithmetic", seed=2).reset(index=0)[0]
    assert a != b


def test_clone_keeps_the_problem_and_shares_the_dataset():
    env = gem_core.make("rg:leg_counting")
    env.reset(seed=1)
    clone = env.clone()
    assert clone.entry == env.entry and clone.dataset is env.dataset
    assert clone.step(f"\\boxed{{{env.entry['answer']}}}")[1] == 1.0
    assert env.step("\\boxed{-1}")[1] == 0.0


def test_options_reach_the_dataset_and_bad_ones_are_named():
    env = gem_core.make("rg:basic_arithmetic", config={"min_terms": 2, "max_terms": 2, "min_digits": 1,
                                                       "max_digits": 1})
    env.reset(seed=0)
    assert len(env.entry["question"]) < 60
    with pytest.raises(GemError, match=r"no option 'terms'.*min_terms=2"):
        gem_core.make("rg:basic_arithmetic", config={"terms": 3})
    with pytest.raises(GemError, match="Invalid options"):
        gem_core.make("rg:basic_arithmetic", config={"min_terms": 5, "max_terms": 2})
    with pytest.raises(GemError, match="JSON data"):
        gem_core.make("rg:basic_arithmetic", config={"min_terms": {1, 2}})
    with pytest.raises(GemError, match="size must be a positive integer"):
        gem_core.make("rg:basic_arithmetic", size=0)


def test_mixing_needs_datasets_and_names_wrong_ones():
    with pytest.raises(GemError, match=r"datasets=\{name: weight"):
        gem_core.make("rg:composite")
    with pytest.raises(UnknownNameError, match="leg_counting"):
        gem_core.make("rg:composite", datasets={"leg_count": 1})
    with pytest.raises(GemError, match="positive weight"):
        gem_core.make("rg:composite", datasets={"leg_counting": 0})
    with pytest.raises(GemError, match="only accepted by rg:composite"):
        gem_core.make("rg:leg_counting", datasets={"basic_arithmetic": 1})


def test_weights_shape_the_mix():
    env = gem_core.make("rg:composite", size=400, datasets={"leg_counting": 9, "basic_arithmetic": 1})
    sources = [env.dataset[i]["metadata"]["source_dataset"] for i in range(400)]
    assert 0.8 < sources.count("leg_counting") / 400 < 0.97


def test_no_box_is_a_format_error_scored_zero():
    env = gem_core.make("rg:leg_counting")
    env.reset(seed=0)
    observation, reward, terminated, _, info = env.step(f"It is {env.entry['answer']}.")
    assert reward == 0.0 and terminated and info["format_error"] and info["answer"] is None


def test_replaced_scorers_do_not_reward_wrong_answers():
    env = gem_core.make("rg:game_of_life_halting")
    env.reset(seed=0)
    gold = env.entry["answer"]
    assert env.clone().step(f"\\boxed{{{gold.lower()}}}")[1] == 1.0
    assert env.step(f"\\boxed{{{'True' if gold == 'False' else 'False'}}}")[1] == 0.0
    env = gem_core.make("rg:coin_flip")
    env.reset(seed=0)
    assert env.clone().step(f"\\boxed{{{env.entry['answer']}}}")[1] == 1.0
    assert env.step("\\boxed{0}")[1] < 0.5


def test_an_answer_the_scorer_evaluates_cannot_hang_the_caller():
    env = gem_core.make("rg:polynomial_multiplication", time_limit=1.0)  # its scorer hands answers to sympy
    env.reset(seed=0)
    env.clone().step("\\boxed{warm up the worker}")
    start = time.monotonic()
    _, reward, terminated, _, info = env.step("\\boxed{factorial(10**8)}")  # plain mathematics, for hours
    assert time.monotonic() - start < 1.0 + scoring_pool().grace + 1.0
    assert reward == 0.0 and terminated and info["timed_out"]


@pytest.mark.skipif(not sandboxed(), reason="bubblewrap is not available here")
def test_an_answer_the_scorer_evaluates_cannot_touch_files():
    target = Path(__file__).parent / "written-by-an-answer"
    for name in ("rg:string_insertion", "rg:polynomial_multiplication"):  # eval(), and sympy's parse_expr
        env = gem_core.make(name)
        env.reset(seed=0)
        env.step(f"\\boxed{{open({str(target)!r}, 'w').write('x')}}")
        env.reset(seed=0)
        env.step(f"\\boxed{{__import__('builtins').open({str(target)!r}, 'w').write('x')}}")
    assert not target.exists()


WALK_UP = "__import__('sympy').parse_expr(__import__('sys')._getframe({}).f_locals['entry']['answer'])"


@pytest.mark.parametrize("name", ["rg:string_insertion", "rg:spiral_matrix", "rg:polynomial_multiplication",
                                  "rg:simple_integration", "rg:countdown"])
def test_an_answer_cannot_read_the_right_one_from_the_scorer(name):
    """Scorers that eval() an answer or hand it to sympy evaluate it where the right answer is: by
    name, or a few frames up. Here such answers earn what any wrong answer earns, and right answers
    (plain mathematics, or lists of literals) are paid as before."""
    env = gem_core.make(name)
    env.reset(seed=0)
    assert env.clone().step(f"\\boxed{{{env.entry['answer']}}}")[1] == 1.0
    wrong = env.clone().step("\\boxed{not the answer}")[1]
    reads = ["oracle_answer", "oracle_answer.split()", "entry['answer']", *map(WALK_UP.format, range(1, 8))]
    assert [env.clone().step(f"\\boxed{{{answer}}}")[1] for answer in reads] == [wrong] * len(reads)


def test_a_scorer_that_evaluates_its_problem_reads_arithmetic_but_nothing_else():
    """bitwise_arithmetic's scorer evaluates its own problem (arithmetic of hex numbers) with eval:
    that still works, and an answer that reaches for more, or for a number too large to compute,
    earns nothing."""
    env = gem_core.make("rg:bitwise_arithmetic")
    env.reset(seed=0)
    assert env.clone().step(f"\\boxed{{{env.entry['answer']}}}")[1] == 1.0
    for answer in ("9**9**9", "1 << 10**9", "__import__('os').getpid()"):
        assert env.clone().step(f"\\boxed{{{answer}}}")[1] == 0.0


def test_a_list_of_literals_keeps_its_partial_credit():
    env = gem_core.make("rg:string_insertion")
    env.reset(seed=0)
    assert env.step(f"\\boxed{{{list(env.entry['answer'])!r}}}")[1] == 0.1


def test_async_steps_run_concurrently():
    envs = [gem_core.make("rg:leg_counting") for _ in range(4)]

    async def episode(env, seed):
        await env.areset(seed=seed)
        return (await env.astep(f"\\boxed{{{env.entry['answer']}}}"))[1]

    async def main():
        return await asyncio.gather(*(episode(env, i) for i, env in enumerate(envs)))

    assert asyncio.run(main()) == [1.0] * 4


def test_misuse_raises_clear_errors():
    env = gem_core.make("rg:leg_counting")
    assert_single_answer_misuse_is_clear(env, "\\boxed{1}")
    with pytest.raises(gem_core.EnvArgumentError):
        gem_core.make("rg:leg_counting", sizes=3)

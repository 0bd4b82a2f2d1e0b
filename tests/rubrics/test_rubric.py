"""Rubrics of weighted functions on a real environment: what each step earns, what the criteria
see, the wrapper by name, and the errors a mistaken rubric gets."""

from __future__ import annotations

import copy
import math

import pytest

import gem_core
from gem_core import GemError
from gem_core.episodes import Episode, Turn
from gem_core.rubrics import Criterion, Judge, Rubric, RubricWrapper, judge, parse_score
from tests.helpers import run_python
from tests.rubrics.guessing import ENV, GUESSES, play


def action_length(turn: Turn) -> float:
    return len(turn.action)


def test_each_step_earns_the_weighted_environment_reward_and_turn_parts_and_the_last_the_episode_parts():
    plain = play(gem_core.make(ENV))
    seen: list[Episode] = []

    def turns_taken(episode: Episode) -> float:
        seen.append(copy.deepcopy(episode))
        return episode.num_turns

    rubric = Rubric([("short", lambda turn: len(turn.action) < 10, 0.5, "turn"),
                     Criterion("turns", turns_taken, weight=-0.1, scope="episode")])
    scored = play(RubricWrapper(gem_core.make(ENV), rubric, env_weight=2.0))
    assert len(scored) == len(plain) >= 2
    for number, (before, after) in enumerate(zip(plain, scored), 1):
        last = number == len(plain)
        expected = 2.0 * before[1] + 0.5 * (len(GUESSES[number - 1]) < 10) + (-0.1 * len(plain) if last else 0.0)
        assert after[1] == pytest.approx(expected)
        assert after[0] == before[0] and after[2:4] == before[2:4]
        rubric_info = after[4]["rubric"]
        assert rubric_info["env_reward"] == before[1] and rubric_info["reward"] == pytest.approx(expected)
        assert set(rubric_info["parts"]) == ({"short", "turns"} if last else {"short"})
        assert "judge_fault" not in after[4]  # no judge ran
    episode, = seen  # the episode criterion ran once, at the end, on the whole episode
    assert episode.env_id == ENV and episode.seed == 0
    assert [t.action for t in episode.turns] == GUESSES[:len(plain)]
    assert [t.reward for t in episode.turns] == [step[1] for step in plain]  # the environment's rewards
    assert episode.final_observation == plain[-1][0] and episode.turns[-1].truncated == plain[-1][3]


def test_turn_criteria_see_the_observation_the_action_answered():
    seen: list[str] = []
    env = RubricWrapper(gem_core.make(ENV), [("seen", lambda turn: seen.append(turn.observation) or 0, 1, "turn")])
    first, _ = env.reset(seed=3)
    second = env.step(GUESSES[0])[0]
    env.step(GUESSES[1])
    assert seen == [first, second]


def test_the_rubric_wrapper_and_its_criteria_by_name():
    chain = [("rubric", {"rubric": [("length", "tests.rubrics.test_rubric:action_length", 0.01, "turn")],
                         "env_weight": 0.0})]
    env = gem_core.wrap(gem_core.make(ENV), chain)
    assert isinstance(env, RubricWrapper)
    env.reset(seed=0)
    assert env.step("\\boxed{5}")[1] == pytest.approx(0.01 * len("\\boxed{5}"))
    with gem_core.make_vec(ENV, num_envs=2, wrappers=chain, mode="sync") as vec:
        vec.reset()
        _, rewards, *_ = vec.step(["\\boxed{1}", "\\boxed{10}"])
    assert list(rewards) == pytest.approx([0.01 * 9, 0.01 * 10])


def test_a_clone_plays_on_alone_and_shares_its_judge(stub_chat_server):
    wrapped = judge(gem_core.make(ENV), "Guess well.", model="stub-judge", base_url=stub_chat_server.base_url,
                    cache=False)
    wrapped.reset(seed=0)
    wrapped.step(GUESSES[0])
    twin = wrapped.clone()
    twin.step(GUESSES[1])
    assert wrapped.episode.num_turns == 1 and twin.episode.num_turns == 2
    assert twin.rubric.criteria[0].score is wrapped.rubric.criteria[0].score


@pytest.mark.parametrize(("text", "score"), [
    ("SCORE: 7", 0.7), ("The guesses are sensible.\nSCORE: 8", 0.8), ("score = 3 ... final SCORE: 9", 0.9),
    ("**Score:** 10", 1.0), ("Score: 4/5", 0.8), ("6 out of 10", 0.6), ("7", 0.7), (" 2.5 ", 0.25),
    ("SCORE: 11", "out_of_range"), ("SCORE: -1", "out_of_range"), ("Score: 3/0", "out_of_range"),
    ("-3", "out_of_range"), ("**7**.", 0.7),
    ("A fine answer.", "unparseable"), ("", "unparseable"), ("The agent scored well", "unparseable"),
])
def test_scores_read_from_a_judges_answer(text, score):
    assert parse_score(text, 10) == (pytest.approx(score) if isinstance(score, float) else score)


def failing(turn: Turn) -> float:
    raise ZeroDivisionError("no")


@pytest.mark.parametrize(("criterion", "message"), [
    (("broken", failing, 1, "turn"), "Criterion 'broken' failed on a turn: ZeroDivisionError: no"),
    (("none", lambda turn: None, 1, "turn"), "Criterion 'none' returned None"),
    (("nan", lambda turn: math.nan, 1, "turn"), "Criterion 'nan' returned nan"),
    (("text", lambda turn: "1", 1, "turn"), "Criterion 'text' returned '1'"),
])
def test_a_criterion_that_fails_or_returns_no_number_is_an_error_naming_it(criterion, message):
    env = RubricWrapper(gem_core.make(ENV), [criterion])
    env.reset(seed=0)
    with pytest.raises(GemError, match=message):
        env.step(GUESSES[0])


@pytest.mark.parametrize(("criteria", "message"), [
    ([("a", action_length, 1, "turns")], "scope of criterion 'a' is 'turn' or 'episode'"),
    ([("a", action_length, math.inf)], "weight of criterion 'a' must be a finite number"),
    ([("a", action_length), ("a", action_length)], "distinct names; repeated: a"),
    ([("a", 3)], "Criterion 'a' scores with 3, which is not callable"),
    ([("a", "tests.rubrics.test_rubric:no_such_function")], "Cannot find 'tests.rubrics.test_rubric:no_such"),
    ([("a",)], r"A criterion is a Criterion or \(name, score"),
    ([], "at least one criterion"),
])
def test_a_mistaken_rubric_is_refused_when_it_is_made(criteria, message):
    with pytest.raises(GemError, match=message):
        Rubric(criteria)


def test_judge_options_are_checked_when_it_is_made(monkeypatch):
    monkeypatch.delenv("GEM_JUDGE", raising=False)
    env = gem_core.make(ENV)
    with pytest.raises(GemError, match="needs a judge model.*GEM_JUDGE="):
        judge(env, "Be right.")
    for options, message in [({"max_score": 0}, "max_score"), ({"fallback": math.nan}, "fallback"),
                             ({"timeout": 0}, "timeout"), ({"timeout": "60"}, "timeout must be a positive number"),
                             ({"temperature": "hot"}, "temperature must be a number"),
                             ({"max_tokens": 1.5}, "max_tokens must be a whole number"), ({"scope": "step"}, "scope"),
                             ({"cache": 3}, "cache must be"), ({"env_weight": "1"}, "env_weight")]:
        with pytest.raises(GemError, match=message):
            judge(env, "Be right.", model="m", base_url="http://127.0.0.1:9/v1", **options)
    with pytest.raises(GemError, match="needs a rubric"):
        Judge("  ", model="m")
    with pytest.raises(GemError, match="does not accept 'tokenizer'"):
        gem_core.wrap(env, [("judge", {"model": "m", "tokenizer": None})])


def test_judge_options_come_from_gem_judge_when_not_given(monkeypatch):
    monkeypatch.setenv("GEM_JUDGE", '{"model": "from-env", "base_url": "http://127.0.0.1:9/v1", "timeout": 5, '
                                    '"weight": 0.5, "rubric": "Be right."}')
    wrapped = judge(gem_core.make(ENV), timeout=7)
    criterion, = wrapped.rubric.criteria
    assert criterion.weight == 0.5 and criterion.scope == "episode" and wrapped.env_weight == 1.0
    assert criterion.score.rubric == "Be right." and criterion.score.endpoint.model == "from-env"
    assert criterion.score.endpoint.timeout == 7.0  # given options win
    for text, message in [("{model: x}", "GEM_JUDGE is not valid JSON"), ('["x"]', "must hold a JSON object"),
                          ('{"model": "x", "modle": "y"}', "does not take: modle; it takes: rubric, model")]:
        monkeypatch.setenv("GEM_JUDGE", text)
        with pytest.raises(GemError, match=message):
            judge(gem_core.make(ENV))


def test_without_the_openai_client_a_judge_names_the_extra_to_install():
    result = run_python("""
        import sys
        sys.modules["openai"] = None
        import gem_core
        from gem_core.rubrics import Judge
        try:
            Judge("Be right.", model="m")
        except gem_core.MissingDependencyError as e:
            print(e)
    """)
    assert "pip install 'gem-adapters[openai]'" in result.stdout, result.stderr


def test_importing_rubrics_loads_no_http_client():
    result = run_python("""
        import sys
        import gem_core.rubrics
        gem_core.get_wrapper("judge")
        print(sorted(m for m in ("openai", "httpx", "torch") if m in sys.modules))
    """)
    assert result.stdout.strip() == "[]", result.stderr

"""The QA environments on fixtures of every dataset they read, through the real loaders."""

from __future__ import annotations

import pytest

import gem_core
from gem_core.errors import DataNotFoundError, EnvArgumentError, GemError
from gem_envs.qa import plugin

from tests.helpers import assert_single_answer_misuse_is_clear

from .conftest import FIXTURES

# Every registered dataset id, and the fixture folder laid out like its Hub repository.
FIXTURE_OF = {
    "qa:NaturalQuestions": "NaturalQuestions",
    "qa:HotpotQA": "HotpotQA",
    "eval:QaOpen": "nq_open",
    **{env_id: "search-eval" for env_id, spec in plugin.DATASETS.items() if spec[0] == "axon-rl/search-eval"},
    **{f"logic:RuleTaker-d{d}": "RuleTaker-d1-70k" for d in plugin.RULETAKER_DEPTHS},
}


def make(env_id, **kwargs):
    return gem_core.make(env_id, path=str(FIXTURES / FIXTURE_OF[env_id]), **kwargs)


def test_every_dataset_id_has_a_fixture():
    registered = {s.id for s in gem_core.list_envs() if s.entry_point == "gem_envs.qa.env:QaEnv" and not s.wrappers}
    assert registered == set(FIXTURE_OF)
    assert all(not gem_core.spec(env_id).offline for env_id in registered)


@pytest.mark.parametrize("env_id", sorted(FIXTURE_OF))
def test_gold_answer_wins_and_wrong_answer_loses(env_id):
    env = make(env_id)
    boxed = env_id.startswith("logic:")
    for index in range(len(env)):
        observation, info = env.reset(index=index)
        assert env.question in observation and info["index"] == index
        gold = env.answers[0]
        answer = f"\\boxed{{{gold}}}" if boxed else f"<think>...</think><answer>{gold.upper()}.</answer>"
        _, reward, terminated, truncated, info = env.step(answer)
        assert (reward, terminated, truncated, info["correct"]) == (1.0, True, False, True)
        env.reset(index=index)
        wrong = "\\boxed{zzz}" if boxed else "<answer>zzz</answer>"
        _, reward, _, _, info = env.step(wrong)
        assert (reward, info["correct"], info["format_error"]) == (0.0, False, False)


def test_split_of_the_evaluation_set_is_the_one_asked_for():
    questions = {env_id: make(env_id).rows[0]["question"]
                 for env_id in FIXTURE_OF if FIXTURE_OF[env_id] == "search-eval"}
    assert len(set(questions.values())) == 7
    assert "Kyoto" in questions["eval:Musique"] and "Lisbon" in questions["eval:HotpotQA"]
    assert len(make("eval:QaOpen")) == 2  # the validation split, not train


def test_ruletaker_reads_boxed_answers_and_says_so():
    env = make("logic:RuleTaker-d1")
    observation, _ = env.reset(index=0)
    assert "\\boxed{}" in observation
    _, reward, _, _, info = env.step("<answer>True</answer>")  # the wrong format for this env
    assert reward == 0.0 and info["format_error"]


def test_no_answer_gets_the_documented_penalty():
    env = make("qa:HotpotQA")
    env.reset(seed=0)
    observation, reward, terminated, _, info = env.step("I think it is the Seine.")
    assert (reward, terminated, info["format_error"], info["answer"]) == (0.0, True, True, None)
    assert "<answer>" in observation
    env = make("qa:HotpotQA", format_penalty=-0.5)
    env.reset(seed=0)
    assert env.step("no tags")[1] == -0.5


@pytest.mark.parametrize("action", ["", "<answer>" * 10_000, "\x00\udcff" * 1000, "x" * 1_000_000,
                                    "<answer>" + "a" * 100_000 + "</answer>"])
def test_any_action_gives_a_valid_transition(action):
    env = make("qa:NaturalQuestions")
    env.reset(seed=1)
    observation, reward, terminated, truncated, info = env.step(action)
    assert isinstance(observation, str) and reward in (0.0, 1.0) and terminated and not truncated


def test_random_actions_are_well_formed():
    for env_id in ("qa:NaturalQuestions", "logic:RuleTaker-d1"):
        env = make(env_id)
        env.reset(seed=3)
        assert not env.step(env.sample_random_action())[4]["format_error"]


def test_seeding_and_passes_over_the_questions():
    env = make("qa:NaturalQuestions")
    first = env.reset(seed=7)[0]
    assert make("qa:NaturalQuestions").reset(seed=7)[0] == first
    env.reset(seed=7)
    seen = [env.index] + [env.reset()[1]["index"] for _ in range(len(env) - 1)]
    assert sorted(seen) == list(range(len(env)))  # each question once per pass
    assert len({make("qa:NaturalQuestions").reset(seed=s)[1]["index"] for s in range(20)}) > 1


def test_clone_is_independent():
    env = make("qa:NaturalQuestions")
    env.reset(seed=2)
    twin = env.clone()
    assert twin.question == env.question
    assert env.step(f"<answer>{env.answers[0]}</answer>")[1] == 1.0
    assert twin.step("<answer>wrong</answer>")[1] == 0.0  # the twin's episode was still open
    assert [env.reset()[1]["index"] for _ in range(3)] == [twin.reset()[1]["index"] for _ in range(3)]


def test_misuse_is_a_clear_error():
    env = make("qa:NaturalQuestions")
    assert_single_answer_misuse_is_clear(env, "<answer>x</answer>")
    with pytest.raises(GemError, match="out of range"):
        env.reset(index=99)
    with pytest.raises(EnvArgumentError, match="answer_key"):
        make("qa:NaturalQuestions", anwser_key="x")


def test_missing_data_says_how_to_get_it():
    with pytest.raises(DataNotFoundError) as caught:
        gem_core.make("eval:PopQA")
    message = str(caught.value)
    assert "axon-rl/search-eval" in message and "popqa" in message
    assert "load_dataset" in message and "path=" in message
    with pytest.raises(DataNotFoundError, match="does not exist"):
        gem_core.make("qa:HotpotQA", path="/nonexistent/file.jsonl")


def test_wrong_columns_and_splits_name_what_exists():
    with pytest.raises(GemError, match="'problem'.*columns are 'question', 'answer'"):
        make("eval:QaOpen", question_key="problem")
    with pytest.raises(GemError, match="no split 'nope'"):
        gem_core.make("eval:QaOpen", path=str(FIXTURES / "nq_open"), split="nope")


def test_local_copies_in_every_format(tmp_path):
    import datasets

    rows = [{"question": "What is 2 + 2?", "answer": ["4", "four"]}]
    datasets.Dataset.from_list(rows).to_parquet(str(tmp_path / "q.parquet"))
    datasets.DatasetDict({"validation": datasets.Dataset.from_list(rows)}).save_to_disk(str(tmp_path / "saved"))
    (tmp_path / "q.jsonl").write_text('{"question": "What is 2 + 2?", "answer": ["4", "four"]}\n')
    for path in ("q.parquet", "saved", "q.jsonl"):
        env = gem_core.make("eval:QaOpen", path=str(tmp_path / path))
        env.reset(seed=0)
        assert env.step("<answer>Four</answer>")[1] == 1.0, path
    env = gem_core.make("eval:QaOpen", dataset=rows)
    env.reset(seed=0)
    assert env.answers == ["4", "four"]
    (tmp_path / "bad.txt").write_text("x")
    with pytest.raises(GemError, match="jsonl"):
        gem_core.make("eval:QaOpen", path=str(tmp_path / "bad.txt"))

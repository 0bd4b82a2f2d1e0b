"""The dataset environments' loaders, on the fixtures laid out like the Hub repositories."""

import json

import pytest

import gem_core
from gem_core.errors import DataNotFoundError, GemError
from gem_envs.math.data import load_problems
from gem_envs.math.plugin import EVALUATION_DATASET, EVALUATION_SETS, TRAINING_SETS
from tests.helpers import REPO, make_without, offline_data_error

FIXTURES = REPO / "tests" / "fixtures" / "math"
DATASET_IDS = {env_id: dataset for env_id, (dataset, _) in TRAINING_SETS.items()}
DATASET_IDS |= {env_id: EVALUATION_DATASET for env_id in EVALUATION_SETS}


def fixture_rows(dataset: str, split: str) -> list[dict]:
    path = FIXTURES / dataset.split("/")[1] / "data" / f"{split}-00000-of-00001.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_dataset_id_is_registered_as_the_reference_names_it():
    ids = {s.id for s in gem_core.list_envs()}
    assert set(DATASET_IDS) <= ids
    assert {"math:GSM8K", "math:Math12K", "math:Math8K-3to5", "math:Orz57K", "math:DeepScaleR40K",
            "math:ASDiv2K", "eval:MATH500", "eval:AMC", "eval:AIME24", "eval:OlympiadBench",
            "eval:Minerva"} <= set(DATASET_IDS)
    for env_id, dataset in DATASET_IDS.items():
        spec = gem_core.spec(env_id)
        assert spec.kwargs["dataset_name"] == dataset and spec.offline is False


@pytest.mark.parametrize("env_id", sorted(DATASET_IDS))
def test_each_loader_reads_its_fixture(env_id):
    dataset = DATASET_IDS[env_id]
    split = gem_core.spec(env_id).kwargs["split"] or "train"
    rows = fixture_rows(dataset, split)
    env = gem_core.make(env_id, path=str(FIXTURES / dataset.split("/")[1]))
    assert len(env.problems) == len(rows)
    for i, row in enumerate(rows):
        observation, info = env.reset(index=i)
        assert observation.startswith(row["problem"]) and info["index"] == i
        assert env.answers == (row["answer"],)
        assert env.step(f"\\boxed{{{row['answer']}}}")[1] == 1.0
    env.reset(index=0)
    assert env.step("\\boxed{-98765}")[1] == 0.0


def test_a_data_file_and_a_saved_dataset_load_too(tmp_path):
    import datasets

    rows = fixture_rows("axon-rl/GSM-8k", "train")
    single = FIXTURES / "GSM-8k" / "data" / "train-00000-of-00001.jsonl"
    env = gem_core.make("math:GSM8K", path=str(single))
    assert len(env.problems) == len(rows)
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "saved"))
    env = gem_core.make("math:GSM8K", path=str(tmp_path / "saved"))
    assert env.problems[0] == (rows[0]["problem"], (rows[0]["answer"],))


def test_rows_can_be_given_directly_with_several_answers():
    rows = [{"q": "x^2 = 9, x = ?", "a": ["3", "-3"]}, {"q": "1 + 1 = ?", "a": 2}]
    env = gem_core.make("math:Math12K", dataset=rows, question_key="q", answer_key="a", shuffle=False)
    env.reset(index=0)
    assert env.step("\\boxed{-3}")[1] == 1.0
    env.reset(index=1)
    assert env.answers == ("2",) and env.step("\\boxed{2}")[1] == 1.0


def test_wrong_columns_and_splits_name_the_fix():
    path = str(FIXTURES / "GSM-8k")
    with pytest.raises(GemError, match="question_key"):
        gem_core.make("math:GSM8K", path=path, question_key="question")
    with pytest.raises(GemError, match=r"splits \['amc', 'aime24', 'math', 'minerva', 'olympiad_bench'\]|Unknown split"):
        gem_core.make("eval:AMC", path=str(FIXTURES / "math-eval"), split="validation")
    with pytest.raises(GemError, match="has no question or no answer"):
        gem_core.make("math:GSM8K", dataset=[{"problem": "1+1?", "answer": None}])
    with pytest.raises(GemError, match="list of dicts"):
        gem_core.make("math:GSM8K", dataset="not rows")


def test_a_missing_path_says_what_to_pass(tmp_path):
    with pytest.raises(DataNotFoundError, match="does not exist"):
        gem_core.make("math:GSM8K", path=str(tmp_path / "nowhere"))


def test_a_dataset_that_is_neither_cached_nor_reachable_says_how_to_get_it(tmp_path):
    message = offline_data_error("math:Orz57K", tmp_path)
    assert "axon-rl/ORZ-57k" in message
    assert "hf download axon-rl/ORZ-57k --repo-type dataset --local-dir ORZ-57k" in message
    assert "path='ORZ-57k'" in message


def test_loaded_tables_are_shared_between_environments():
    path = str(FIXTURES / "MATH-12k")
    first = gem_core.make("math:Math12K", path=path)
    second = gem_core.make("math:Math12K", path=path)
    assert first.problems is second.problems
    assert first.clone().problems is first.problems
    assert load_problems.cache_info().hits >= 1


def test_without_the_extra_make_names_the_install_command():
    done = make_without("datasets", "math:GSM8K")
    assert "pip install 'gem-adapters[envs]'" in done.stdout, done.stderr

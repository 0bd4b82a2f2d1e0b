"""gem_envs.data: the loader and the episode order that the math, code and QA packs share."""

from __future__ import annotations

import inspect
import json
import random

import pytest

import gem_core
from gem_core.errors import DataNotFoundError, GemError
from gem_envs.code.env import CodeEnv
from gem_envs.data import RowOrder, column, how_to_get, load_rows
from gem_envs.math.env import MathEnv
from gem_envs.qa.env import QaEnv
from tests.helpers import REPO

ROWS = [{"question": f"q{i}", "answer": str(i)} for i in range(6)]
GSM = REPO / "tests" / "fixtures" / "math" / "GSM-8k"
MATH_EVAL = REPO / "tests" / "fixtures" / "math" / "math-eval"
TESTS = json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]})
# One id per pack, each given rows with the columns it reads by default.
PACK_ROWS = {
    "math:GSM8K": [{"problem": f"What is {i} + 0?", "answer": str(i)} for i in range(7)],
    "code:Taco8k": [{"problem": f"Print {i}.", "tests": TESTS} for i in range(7)],
    "qa:HotpotQA": [{"problem": f"Question {i}?", "answer": str(i)} for i in range(7)],
}


# --- the episode order -----------------------------------------------------------------------

def draws(order: RowOrder, rng: random.Random, count: int, seed: int | None = None) -> list[int]:
    first = [order.next(rng, seed=seed)] if seed is not None else []
    return first + [order.next(rng) for _ in range(count - len(first))]


def test_a_seeded_order_visits_every_row_once_per_pass_then_draws_another():
    order = RowOrder(50)
    rng = random.Random(3)
    first, second = draws(order, rng, 50, seed=3), draws(order, rng, 50)
    assert sorted(first) == sorted(second) == list(range(50))
    assert first != second and first != list(range(50))


def test_the_same_seed_gives_the_same_order_and_other_seeds_other_orders():
    orders = {seed: tuple(draws(RowOrder(30), random.Random(seed), 30, seed=seed)) for seed in range(5)}
    assert orders[2] == tuple(draws(RowOrder(30), random.Random(2), 30, seed=2))
    assert len(set(orders.values())) == 5


def test_a_seed_restarts_the_order_midway():
    order, rng = RowOrder(10), random.Random(1)
    draws(order, rng, 4, seed=1)
    rng.seed(8)
    again = draws(order, rng, 10, seed=8)
    assert sorted(again) == list(range(10))


def test_a_seeded_draw_does_not_depend_on_the_number_of_rows_to_shuffle():
    order = RowOrder(10**12)  # a shuffle that lists the rows could not start
    rows = draws(order, random.Random(0), 1000, seed=0)
    assert len(set(rows)) == 1000 and all(0 <= row < 10**12 for row in rows)


def test_an_explicit_index_leaves_the_shuffled_order_alone():
    order, twin = RowOrder(20), RowOrder(20)
    a, b = random.Random(4), random.Random(4)
    expected = draws(twin, b, 20, seed=4)
    got = [order.next(a, seed=4)]
    assert order.next(a, index=7) == 7
    got += [order.next(a) for _ in range(19)]
    assert got == expected


def test_in_order_a_seed_picks_the_start_and_an_index_moves_it():
    order, rng = RowOrder(5, shuffle=False), random.Random(0)
    assert draws(order, rng, 3) == [0, 1, 2]
    assert draws(order, rng, 4, seed=13) == [3, 4, 0, 1]
    assert order.next(rng, index=4) == 4 and order.next(rng) == 0


def test_a_copy_continues_identically_and_independently():
    order, rng = RowOrder(40), random.Random(9)
    draws(order, rng, 5, seed=9)
    twin, twin_rng = order.copy(), random.Random()
    twin_rng.setstate(rng.getstate())
    assert draws(order, rng, 35) == draws(twin, twin_rng, 35)
    assert sorted(draws(RowOrder(3), rng, 3, seed=1)) == [0, 1, 2]


@pytest.mark.parametrize("index", [-1, 5, True, 1.0, "0"])
def test_a_bad_index_names_the_range(index):
    with pytest.raises(GemError, match=r"out of range: there are 5 rows \(0 to 4\)"):
        RowOrder(5).next(random.Random(0), index=index)


# --- the loader ------------------------------------------------------------------------------

def test_rows_in_memory_come_back_as_given():
    assert load_rows("x", dataset=ROWS, columns={"question_key": "question"}) is ROWS
    assert column(ROWS, "answer") == [str(i) for i in range(6)]


def test_a_dataset_dict_needs_a_split_when_it_has_several():
    import datasets

    both = datasets.DatasetDict({"train": datasets.Dataset.from_list(ROWS),
                                 "test": datasets.Dataset.from_list(ROWS[:2])})
    assert len(load_rows("x", dataset=both, split="test")) == 2
    assert column(load_rows("x", dataset=both, split="train"), "question") == [r["question"] for r in ROWS]
    with pytest.raises(GemError, match=r"several splits \(train, test\); pass split="):
        load_rows("x", dataset=both)
    with pytest.raises(GemError, match="no split 'dev'; the splits are train, test"):
        load_rows("x", dataset=both, split="dev")
    assert len(load_rows("x", dataset=datasets.DatasetDict({"only": both["test"]}))) == 2


@pytest.mark.parametrize("data, message", [
    ("not rows", "must be a datasets.Dataset or a list of dicts, not str"),
    (42, "not int"),
    ([{"question": "q", "answer": "a"}, "row"], "row 1 of the data is a str"),
    ([{"question": "q", "answer": "a"}, {"question": "q"}], r"row 1 of the data has no column 'answer', unlike row 0"),
])
def test_rows_that_are_not_dicts_with_the_columns_are_named(data, message):
    with pytest.raises(GemError, match=message):
        load_rows("x", dataset=data, columns={"question_key": "question", "answer_key": "answer"})


def test_a_missing_column_names_the_option_and_the_columns_there_are():
    with pytest.raises(GemError, match=r"no column 'problem' \(question_key\); its columns are 'question', "
                                       r"'answer'\. Pass question_key= one of them"):
        load_rows("x", dataset=ROWS, columns={"question_key": "problem"})


def test_no_source_and_no_rows_are_clear_errors():
    with pytest.raises(GemError, match=r"x needs data: pass dataset_name=\.\.\., path=\.\.\. or dataset="):
        load_rows("x")
    with pytest.raises(DataNotFoundError, match="has no rows"):
        load_rows("x", dataset=[])


def test_every_local_format_reads_the_same_rows(tmp_path):
    import datasets

    table = datasets.Dataset.from_list(ROWS)
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "rows.json").write_text(json.dumps(ROWS))
    table.to_parquet(str(tmp_path / "rows.parquet"))
    table.to_csv(str(tmp_path / "rows.csv"), index=False)
    table.save_to_disk(str(tmp_path / "saved"))
    datasets.DatasetDict({"train": table}).save_to_disk(str(tmp_path / "saved_dict"))
    arrow = next((tmp_path / "saved").glob("*.arrow"))
    for name in ("rows.jsonl", "rows.json", "rows.parquet", "rows.csv", "saved", "saved_dict", arrow.name):
        where = arrow if name == arrow.name else tmp_path / name
        rows = load_rows("x", path=where, columns={"question_key": "question", "answer_key": "answer"})
        assert list(column(rows, "question")) == [r["question"] for r in ROWS], name
        assert [str(a) for a in column(rows, "answer")] == [r["answer"] for r in ROWS], name


def test_a_folder_laid_out_like_the_hub_repository_reads_its_splits():
    assert len(load_rows("x", path=GSM)) == len((GSM / "data" / "train-00000-of-00001.jsonl").read_text().splitlines())
    assert len(load_rows("x", path=MATH_EVAL, split="aime24")) > 0
    with pytest.raises(GemError, match="has no split 'validation'"):
        load_rows("x", path=MATH_EVAL, split="validation")
    with pytest.raises(GemError, match="several splits"):
        load_rows("x", path=MATH_EVAL)


def test_unreadable_local_data_says_what_path_takes(tmp_path):
    with pytest.raises(DataNotFoundError, match=r"path='.*nowhere' does not exist\. Pass path= a \.jsonl"):
        load_rows("x", path=tmp_path / "nowhere")
    (tmp_path / "rows.txt").write_text("q")
    with pytest.raises(GemError, match=r"cannot read rows\.txt; path= takes a \.jsonl, \.json, \.parquet"):
        load_rows("x", path=tmp_path / "rows.txt")
    (tmp_path / "broken.jsonl").write_text('{"question": \n')
    with pytest.raises(GemError, match="broken.jsonl is not valid JSON"):
        load_rows("x", path=tmp_path / "broken.jsonl")
    (tmp_path / "list.json").write_text('[1, 2]')
    with pytest.raises(GemError, match="row 0 of the data is a int"):
        load_rows("x", path=tmp_path / "list.json")


def test_the_way_to_get_hub_data_gives_both_commands():
    message = how_to_get("eval:PopQA", "axon-rl/search-eval", "popqa", ConnectionError("offline"))
    assert "datasets.load_dataset('axon-rl/search-eval', split='popqa')" in message
    assert "hf download axon-rl/search-eval --repo-type dataset --local-dir search-eval" in message
    assert "path='search-eval'" in message and "ConnectionError: offline" in message


# --- the same options and the same order on every dataset environment -------------------------

@pytest.mark.parametrize("cls, column_option", [(MathEnv, "answer_key"), (CodeEnv, "test_key"), (QaEnv, "answer_key")])
def test_every_dataset_environment_takes_the_same_data_options(cls, column_option):
    accepted = inspect.signature(cls).parameters
    assert {"dataset_name", "split", "path", "dataset", "question_key", column_option, "shuffle"} <= set(accepted)
    assert "data_path" not in accepted


@pytest.mark.parametrize("env_id", sorted(PACK_ROWS))
def test_every_pack_orders_episodes_alike(env_id):
    rows = PACK_ROWS[env_id]
    env = gem_core.make(env_id, dataset=rows)
    seen = [env.reset(seed=5)[1]["index"]] + [env.reset()[1]["index"] for _ in range(len(rows) - 1)]
    assert sorted(seen) == list(range(len(rows)))
    again = gem_core.make(env_id, dataset=rows)
    assert [again.reset(seed=5)[1]["index"]] + [again.reset()[1]["index"] for _ in range(len(rows) - 1)] == seen
    ordered = gem_core.make(env_id, dataset=rows, shuffle=False)
    assert [ordered.reset()[1]["index"] for _ in range(3)] == [0, 1, 2]
    assert ordered.reset(seed=9)[1]["index"] == 2 and ordered.reset(index=6)[1]["index"] == 6
    assert ordered.reset()[1]["index"] == 0
    with pytest.raises(GemError, match="out of range"):
        ordered.reset(index=len(rows))


def test_every_evaluation_set_serves_its_rows_in_order():
    specs = gem_core.list_envs("eval:*")
    assert {"eval:MATH500", "eval:CodeContest", "eval:HumanEval", "eval:PopQA", "eval:PopQA+Search"} <= \
        {s.id for s in specs}
    def shuffles(spec):
        default = inspect.signature(gem_core.registry.load_object(spec.entry_point, what="env")).parameters["shuffle"]
        return spec.kwargs.get("shuffle", default.default)

    assert [s.id for s in specs if shuffles(s) is not False] == []
    humaneval = gem_core.make("eval:HumanEval")  # offline: its default is in order too
    assert [humaneval.reset()[1]["index"] for _ in range(3)] == [0, 1, 2]
    assert humaneval.reset(seed=9)[1]["index"] == 9


@pytest.mark.parametrize("env_id", sorted(PACK_ROWS))
def test_every_pack_names_itself_and_the_option_when_a_column_is_missing(env_id):
    with pytest.raises(GemError, match=rf"The data of {env_id} has no column 'nope' \(question_key\)"):
        gem_core.make(env_id, dataset=PACK_ROWS[env_id], question_key="nope")


@pytest.mark.parametrize("env_id", ["math:GSM8K", "code:Taco8k", "qa:HotpotQA"])
def test_every_pack_reads_a_local_copy_with_path(env_id, tmp_path):
    rows = PACK_ROWS[env_id]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = gem_core.make(env_id, path=str(tmp_path / "rows.jsonl"), shuffle=False)
    assert next(iter(rows[0].values())) in env.reset()[0]

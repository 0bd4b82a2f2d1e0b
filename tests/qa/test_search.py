"""``+Search`` variants: a scripted agent searches the Almanac, reads what comes back, answers."""

from __future__ import annotations

import re

import pytest

import gem_core
from gem_core.errors import GemError

from tests.helpers import search_server

from .conftest import FIXTURES


def search(env, query):
    observation, reward, terminated, truncated, info = env.step(f"<think>Look it up.</think><search>{query}</search>")
    assert (reward, terminated, truncated, info["use_tool"]) == (0.0, False, False, True)
    assert observation.startswith("\n\n<information>Doc 1(Title: ")
    return observation


def read(observation, title, pattern):
    """The first group of ``pattern`` in the passage titled ``title`` of a search result."""
    passage = re.search(rf"Doc \d+\(Title: {re.escape(title)}\) (.*)", observation)
    assert passage, f"{title!r} is not among the results"
    found = re.search(pattern, passage.group(1))
    assert found, f"{pattern!r} not in {passage.group(1)!r}"
    return found.group(1)


def test_two_hop_episodes_search_read_and_answer():
    env = gem_core.make("qa:Almanac-v0+Search", hops=2)
    template = re.compile(r"Question: On which island was (.+) born\?")
    episodes = 0
    for index in range(len(env.unwrapped)):
        observation, info = env.reset(index=index)
        question = template.search(observation)
        if question is None:
            continue
        assert "<search>" in observation and info["tool_use_counter"] == 0  # the tool's instructions
        person = question.group(1)
        town = read(search(env, person), person, r"born in ([^.]+)\.")
        island = read(search(env, town), town, r" on ([^,]+), one of")
        observation, reward, terminated, _, info = env.step(f"<think>{town} is on {island}.</think>"
                                                            f"<answer>{island}</answer>")
        assert (reward, terminated, info["correct"]) == (1.0, True, True), (person, town, island)
        assert (info["tool_use_counter"], info["tool_success_counter"]) == (2, 2)
        episodes += 1
    assert episodes >= 5


def test_one_hop_episode_and_a_wrong_answer():
    env = gem_core.make("qa:Almanac-v0+Search", hops=1)
    rows = env.unwrapped.rows
    index = next(i for i in range(len(rows)) if rows[i]["question"] == "Who founded Pellum?")
    env.reset(index=index)
    founder = read(search(env, "Pellum founded"), "Pellum", r"founded in \d+ by ([^.]+)\.")
    assert env.step(f"<answer>{founder}</answer>")[1] == 1.0
    env.reset(index=index)
    search(env, "Pellum")
    _, reward, terminated, _, info = env.step("<answer>Corvin Hale</answer>")
    assert (reward, terminated, info["correct"]) == (0.0, True, False)


def test_search_budget_then_answer():
    env = gem_core.make("qa:Almanac-v0+Search")
    env.reset(seed=0)
    for n in range(1, 6):
        observation, _, terminated, _, info = env.step(f"<search>query {n}</search>")
        assert not terminated and info["tool_use_counter"] == n
    assert "used all your tool calls" in observation
    observation, reward, terminated, _, info = env.step("<search>one more</search>")
    assert terminated and info["format_error"] and reward == 0.0  # no more searches: taken as the answer


def test_search_variants_of_hub_datasets_need_a_retrieval_server(monkeypatch):
    monkeypatch.delenv("SEARCH_URL", raising=False)
    ids = [s.id for s in gem_core.list_envs("*+Search")]
    assert "qa:HotpotQA+Search" in ids and "eval:Bamboogle+Search" in ids and len(ids) == 11
    with pytest.raises(GemError, match="SEARCH_URL"):
        gem_core.make("qa:HotpotQA+Search", path=str(FIXTURES / "HotpotQA"))


@pytest.fixture
def almanac_server(monkeypatch):
    """``gem search-server`` over the Almanac's corpus, on a free local port, as SEARCH_URL."""
    from gem_envs.qa.almanac import CORPUS

    with search_server("--corpus", str(CORPUS)) as (_, base):
        monkeypatch.setenv("SEARCH_URL", f"{base}/retrieve")
        yield


def test_search_variant_of_a_hub_dataset_through_a_retrieval_server(almanac_server):
    rows = [{"problem": "Who founded the capital of Selvary?", "answer": ["Ilsa Marrow"]}]
    env = gem_core.make("qa:HotpotQA+Search", dataset=rows)
    observation, _ = env.reset(seed=0)
    assert "<search>" in observation
    capital = read(search(env, "Selvary capital"), "Selvary", r"Its capital is ([^;]+);")
    founder = read(search(env, capital), capital, r"founded in \d+ by ([^.]+)\.")
    _, reward, terminated, _, info = env.step(f"<answer>{founder}</answer>")
    assert (reward, terminated, info["tool_use_counter"]) == (1.0, True, 2)

"""The Almanac: the shipped corpus and questions, and the offline environment built on them."""

from __future__ import annotations

import json

import pytest

import gem_core
from gem_core.errors import GemError
from gem_envs.qa.almanac import CORPUS, QUESTIONS, build
from gem_envs.qa.answers import normalize_answer


def read(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_shipped_files_are_what_the_generator_writes():
    assert CORPUS.read_text(encoding="utf-8") == build.render(build.documents())
    assert QUESTIONS.read_text(encoding="utf-8") == build.render(build.questions())


def test_corpus_and_questions_are_consistent():
    docs, questions = read(CORPUS), read(QUESTIONS)
    assert len(docs) >= 60 and len(questions) >= 200
    assert len({d["id"] for d in docs}) == len(docs) and len({d["title"] for d in docs}) == len(docs)
    assert all(d["title"] and len(d["text"]) > 80 for d in docs)
    assert len({q["question"] for q in questions}) == len(questions)
    assert {q["hops"] for q in questions} == {1, 2}
    text = normalize_answer(" ".join(d["text"] for d in docs))
    for q in questions:  # every question is answerable from the corpus
        assert any(normalize_answer(a) in text for a in q["answers"]), q


def test_world_is_coherent():
    for town in build.TOWNS:
        assert 20 <= town.founded - build.PERSON[town.founder].born <= 60, town
        assert build.RIVER[town.river].island == town.island, town
    for person in build.PEOPLE:
        if person.birthplace in build.TOWN:
            assert build.TOWN[person.birthplace].founded <= person.born, person
    for island in build.ISLANDS:
        assert build.TOWN[island.capital].island == island.name


def test_offline_environment_end_to_end():
    env = gem_core.make("qa:Almanac-v0")
    assert gem_core.spec("qa:Almanac-v0").offline
    assert len(env) == len(read(QUESTIONS))
    rewards = []
    for index in range(len(env)):
        observation, _ = env.reset(index=index)
        assert "Question:" in observation
        rewards.append(env.step(f"<answer>{env.answers[-1]}</answer>")[1])
    assert rewards == [1.0] * len(env)


def test_hops_selects_questions():
    one, two = gem_core.make("qa:Almanac-v0", hops=1), gem_core.make("qa:Almanac-v0", hops=2)
    assert len(one) + len(two) == len(read(QUESTIONS)) and len(two) >= 50
    with pytest.raises(GemError, match="hops"):
        gem_core.make("qa:Almanac-v0", hops=3)

"""The judge from Python with a real model (SmolLM2 behind `transformers serve`), and from
`gem eval`, whose judge options come from GEM_JUDGE."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import gem_core
from gem_core.rubrics import JudgeCache, judge, parse_score
from tests.rubrics.guessing import ENV, play


def test_smollm2_judges_an_episode_and_the_same_episode_comes_from_the_cache(smollm2_server):
    wrapped = judge(gem_core.make(ENV), "The agent finds the number in few guesses.", model=smollm2_server.model,
                    base_url=smollm2_server.base_url, max_tokens=48, fallback=-1.0, cache=JudgeCache(), timeout=300)
    *_, (_, reward, _, _, info) = play(wrapped)
    part = info["rubric"]["parts"]["judge"]
    assert part["text"].strip() and part["cached"] is False  # the model's own words
    parsed = parse_score(part["text"], 10)
    if part["fault"] is None:  # a 135M model may or may not end with a readable score: both are handled
        assert part["score"] == parsed and info["judge_fault"] is False
    else:
        assert part["fault"]["kind"] == parsed and part["score"] == -1.0 and info["judge_fault"] is True
    assert reward == pytest.approx(info["rubric"]["env_reward"] + part["score"])
    again = play(wrapped)[-1][4]["rubric"]["parts"]["judge"]
    if part["fault"] is None:
        assert again == {**part, "cached": True}
    else:  # failed judgements are asked again; greedy decoding gives the same answer
        assert again == part


@pytest.mark.timeout(300)
def test_gem_eval_with_the_judge_wrapper(stub_chat_server, tmp_path):
    """The policy and the judge are both stubs here (fixed answers make the returns known); the
    judge options reach the wrapper through GEM_JUDGE."""
    def answer(body: dict) -> str:
        return "SCORE: 7" if body["model"] == "judge-model" else "\\boxed{5}"

    stub_chat_server.answer = answer
    options = {"model": "judge-model", "base_url": stub_chat_server.base_url, "rubric": "Guess the middle first."}
    environment = {**os.environ, "GEM_JUDGE": json.dumps(options)}
    done = subprocess.run(
        [sys.executable, "-m", "gem_core.cli", "eval", "--base-url", stub_chat_server.base_url, "--model",
         stub_chat_server.model, "--env", ENV, "--episodes", "2", "--wrappers", "judge,concat_chat",
         "--output-dir", str(tmp_path)], check=False, capture_output=True, text=True, timeout=240,
        env=environment)
    assert done.returncode == 0, done.stdout + done.stderr
    episodes = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 2
    for episode in episodes:
        last = episode["turns"][-1]["info"]
        assert last["rubric"]["parts"]["judge"]["score"] == pytest.approx(0.7) and last["judge_fault"] is False
        assert sum(t["reward"] for t in episode["turns"]) == pytest.approx(
            sum(t["info"]["rubric"]["env_reward"] for t in episode["turns"]) + 0.7)
    judged = [r for r in stub_chat_server.requests if r["model"] == "judge-model"]
    assert len(judged) == 2 and all("RUBRIC\nGuess the middle first." in r["messages"][1]["content"] for r in judged)


@pytest.mark.parametrize("command", ["eval", "train"])
def test_the_help_of_gem_eval_and_train_says_how_to_add_a_judge(command):
    from tests.helpers import gem_command

    result = gem_command(command, "--help")
    assert result.returncode == 0, result.stderr
    assert "judge,concat_chat adds an LLM judge's score to the reward, its options in $GEM_JUDGE" in \
        " ".join(result.stdout.split())

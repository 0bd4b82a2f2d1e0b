"""The rollout inside TRL's trainer: GEM episodes played turn by turn through the trainer's
generation call (``_generate_single_turn``, here a scripted bisection player so that the turns
are known), with GEM's wrappers and turn limit, the tokens and masks TRL takes, per-turn rewards,
and an environment that fails mid-episode."""

from __future__ import annotations

import pytest

from gem_adapters.common.options import EpisodeOptions
from gem_adapters.trl.rollout import EpisodeRollout
from gem_core.errors import GemError
from tests.adapters import failing
from tests.adapters.scripted import bisection
from tests.adapters.trl.conftest import EASY, rows, scripted_generation


def play(trainer, train_rows, rollout=None):
    from gem_adapters.trl.rollout import episode_starts

    trainer.gem_starts = episode_starts(train_rows)
    prompts = [row["prompt"] for row in train_rows]
    return (rollout or trainer.rollout_func)(prompts, trainer)


def test_episodes_are_played_to_the_end_with_masks_and_per_turn_rewards(make_trainer, smollm2_tokenizer):
    train_rows = rows(EASY, [0, 0, 1, 2])
    trainer = make_trainer(train_rows)
    trainer._generate_single_turn = generate = scripted_generation(smollm2_tokenizer, bisection)
    out = play(trainer, train_rows)

    assert out["gem_stop"] == ["terminated"] * 4  # bisection finds 1..10 within the 4 guesses
    assert out["gem_success"] == [True] * 4 and out["gem_format_error"] == [False] * 4
    assert out["gem_turn_rewards"][0] == out["gem_turn_rewards"][1]  # same seed, same episode
    assert out["logprobs"] is None  # transformers' generation gives none
    assert generate.calls[0] == 4 and generate.calls == sorted(generate.calls, reverse=True)
    for prompt, ids, mask, rewards, spans in zip(out["prompt_ids"], out["completion_ids"], out["env_mask"],
                                                 out["gem_turn_rewards"], out["gem_turn_spans"]):
        assert rewards[-1] == 1.0 and len(rewards) == len(spans)
        assert len(ids) == len(mask) and mask[-1] == 1  # the episode ends with the model's answer
        text = smollm2_tokenizer.decode(prompt + ids, skip_special_tokens=False)
        assert text.count("<|im_start|>assistant\n") == len(rewards)
        for start, end in spans:
            assert all(mask[start:end]) and (start == 0 or mask[start - 1] == 0)
            answer = smollm2_tokenizer.decode(ids[start:end], skip_special_tokens=False)
            assert answer.startswith("I guess \\boxed{") and answer.endswith("<|im_end|>")
        model_only = [t for t, m in zip(ids, mask) if m]
        assert len(model_only) == sum(end - start for start, end in spans)


def test_max_turns_and_the_episode_budget_end_episodes(make_trainer, smollm2_tokenizer):
    train_rows = rows(EASY, [5])  # the number is 7: guessing 1 goes on
    trainer = make_trainer(rows(EASY, [5, 6]))
    trainer._generate_single_turn = scripted_generation(smollm2_tokenizer, lambda prompt: "\\boxed{1}")
    out = play(trainer, train_rows, EpisodeRollout(EpisodeOptions(max_turns=1)))
    assert out["gem_stop"] == ["max_turns"] and len(out["gem_turn_rewards"][0]) == 1
    assert out["gem_success"] == [False] and out["gem_format_error"] == [False]  # a wrong guess, well written

    out = play(trainer, train_rows, EpisodeRollout(episode_tokens=20))
    assert out["gem_stop"] == ["episode_tokens"] and len(out["gem_turn_rewards"][0]) == 1
    assert len(out["completion_ids"][0]) < 20 and all(out["env_mask"][0])


def test_gem_wrappers_act_on_the_episode(make_trainer, smollm2_tokenizer):
    """With the python_tool wrapper the model is told about the tool, and its code's output (run in
    GEM's sandbox) is the next observation, as environment tokens."""
    train_rows = rows(EASY, [3])
    trainer = make_trainer(train_rows)
    seen = []

    def answer(prompt):
        seen.append(prompt)
        return "<python>print(6 * 7)</python>" if len(seen) == 1 else "\\boxed{3}"

    trainer._generate_single_turn = scripted_generation(smollm2_tokenizer, answer)
    out = play(trainer, train_rows, EpisodeRollout(EpisodeOptions(wrappers=("python_tool",), max_turns=3)))
    assert "You can run Python code" in seen[0]
    (_, first_end), (second_start, _) = out["gem_turn_spans"][0][:2]
    between = smollm2_tokenizer.decode(out["completion_ids"][0][first_end:second_start])
    assert "Code execution result" in between and "42" in between
    assert not any(out["env_mask"][0][first_end:second_start])
    assert out["gem_stop"] == ["terminated"] and out["gem_turn_rewards"][0][-1] == 1.0  # seed 3: the number is 3


def test_an_environment_that_raises_mid_episode_fails_it_and_the_batch_goes_on(
        make_trainer, smollm2_tokenizer, caplog):
    with failing.registered() as env_id:
        train_rows = rows(env_id, [0, 1]) + rows(EASY, [0, 0])
        trainer = make_trainer(train_rows)
        trainer._generate_single_turn = scripted_generation(smollm2_tokenizer, bisection)
        out = play(trainer, train_rows)
    assert out["gem_stop"][:2] == ["failed", "failed"]
    assert [f["kind"] for f in out["gem_failure"][:2]] == ["error", "error"]
    assert out["gem_turn_rewards"][:2] == [[failing.FIRST_REWARD, 0.0]] * 2
    assert not any(out["env_mask"][0]) and not any(out["env_mask"][1])  # TRL's loss mask: nothing of them trains
    assert out["gem_stop"][2:] == ["terminated", "terminated"] and out["gem_failure"][2:] == [None, None]
    assert any(out["env_mask"][2]) and any(out["env_mask"][3])
    assert failing.MESSAGE in caplog.text


def test_an_episode_past_its_deadline_fails_at_its_next_step(make_trainer, smollm2_tokenizer):
    import time

    train_rows = rows("game:GuessTheNumber-v0-hard", [0, 1])
    trainer = make_trainer(train_rows)
    generate = scripted_generation(smollm2_tokenizer, bisection)
    calls = []

    def slow_generation(*args, **kwargs):  # TRL's second generation is slow
        calls.append(1)
        if len(calls) == 2:
            time.sleep(0.4)
        return generate(*args, **kwargs)

    trainer._generate_single_turn = slow_generation
    out = play(trainer, train_rows, EpisodeRollout(EpisodeOptions(episode_deadline=0.3)))
    assert out["gem_stop"] == ["failed", "failed"]
    assert [(f["kind"], f["phase"], f["turn"]) for f in out["gem_failure"]] == [("deadline", "policy", 1)] * 2
    assert len(calls) == 2 and not any(out["env_mask"][0])


def test_rows_without_an_environment_are_a_clear_error(make_trainer):
    trainer = make_trainer(rows(EASY, [0, 1]))
    with pytest.raises(GemError, match="env_id"):
        play(trainer, [{"prompt": [{"role": "user", "content": "hi"}]}])


def test_an_unknown_environment_id_is_a_clear_error(make_trainer):
    train_rows = rows(EASY, [0, 1])
    trainer = make_trainer(train_rows)
    bad = [{**row, "env_id": "game:GuessTheNumbr-v0"} for row in train_rows]
    with pytest.raises(GemError, match="GuessTheNumber"):
        play(trainer, bad)


def test_the_rollout_needs_the_gem_trainer(smollm2_tokenizer):
    class PlainTrainer:  # what GRPOTrainer passes: no episode starts
        _tokenizer = smollm2_tokenizer

    with pytest.raises(GemError, match="GemGRPOTrainer"):
        EpisodeRollout()([[{"role": "user", "content": "hi"}]], PlainTrainer())

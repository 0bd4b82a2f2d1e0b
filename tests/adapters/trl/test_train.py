"""End to end: TRL's real GRPOTrainer, with the adapter, trains SmolLM2-135M on
GuessTheNumber on the CPU for two optimiser steps, from the files `gem trl config` writes and the
command it prints (its --config file plus TRL's --key value overrides). Episodes are played
through GEM with the model's own generation (transformers), advantages come from GEM's
estimator, and nothing is stood in for.

The estimator is GEM's REINFORCE: untrained, SmolLM2 seldom writes a valid guess in 16 tokens
(about 1 answer in 30), so in two steps of 8 episodes every return is often the same -0.1, where
ReBN's advantages are all 0 and no weight would move. ReBN's values through the same TRL path are
checked per token on the conformance batch (test_advantages.py)."""

from __future__ import annotations

import shlex
import time

import pytest
import torch

from gem_adapters.trl.config import RunSettings, write_run
from gem_adapters.trl.train import build_trainer, parse
from gem_core import get_estimator
from gem_core.estimators import advantage_stats
from tests.adapters.trl.conftest import EASY

#: Small enough for a 2-core machine: 2 steps of 8 episodes (2 starts x 4), at most 2 turns of
#: 16 tokens each.
OVERRIDES = ["--max_steps", "2", "--max_completion_length", "16", "--gem_max_turns", "2", "--gem_estimator", "reinforce",
             "--learning_rate", "1e-5", "--dataloader_num_workers", "0", "--gradient_checkpointing", "false"]


def test_trl_trains_smollm2_on_gem_episodes_with_a_gem_estimator(tmp_path, smollm2_dir, capsys):
    settings = RunSettings(env_ids=(EASY,), model=str(smollm2_dir), out_dir=tmp_path / "run", train_size=16,
                           val_size=2, batch_size=2, rollouts_per_start=4, cpu=True, seed=3)
    written = write_run(settings)
    argv = shlex.split(written.command)
    assert argv[1:4] == ["-m", "gem_adapters.trl.train", "--config"]
    gem, grpo = parse([*argv[3:], *OVERRIDES])
    assert (gem.gem_estimator, gem.gem_gamma, grpo.num_generations, grpo.per_device_train_batch_size) == ("reinforce", 0.9, 4, 8)

    trainer = build_trainer(gem, grpo)
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    computed = []
    original = trainer._generate_and_score_completions

    def recorded(inputs):  # the batches as TRL's loss will see them
        output = original(inputs)
        computed.append((output, [dict(row) for row in inputs]))
        return output

    trainer._generate_and_score_completions = recorded
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    with capsys.disabled():
        print(f"\n[trl end to end] 2 optimiser steps of 8 episodes on CPU: {seconds:.0f} s")

    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert trainer.state.global_step == 2 and len(logs) == 2
    for entry in logs:
        assert {"loss", "reward", "rewards/episode_return/mean", "gem/turns", "gem/success_rate",
                "gem/format_error_rate", "gem/advantage_mean", "gem/advantage_std"} <= set(entry)
    assert len(computed) == 2
    for entry, (_, rows) in zip(logs, computed):  # TRL's log holds each batch's advantage statistics
        expected = advantage_stats(get_estimator("reinforce")([row["gem_turn_rewards"] for row in rows], gamma=0.9))
        assert {key: entry[f"gem/{key}"] for key in expected} == pytest.approx(expected, abs=1e-4)
    for output, rows in computed:
        advantages, mask = output["advantages"], output["completion_mask"] * output["tool_mask"]
        assert advantages.shape == output["completion_ids"].shape  # per token, from GEM
        assert not advantages[mask == 0].any()  # environment tokens and padding carry nothing
        expected = get_estimator("reinforce")([row["gem_turn_rewards"] for row in rows], gamma=0.9)
        for row, values, advantage in zip(rows, expected, advantages):  # each episode played through GEM
            assert row["env_id"] == EASY and 1 <= len(row["gem_turn_rewards"]) <= 2
            assert len(row["gem_turn_spans"]) == len(row["gem_turn_rewards"])
            for value, (start, end) in zip(values, row["gem_turn_spans"]):
                assert advantage[start:end].tolist() == pytest.approx([value] * (end - start), abs=1e-6)
    changed = [name for name, p in trainer.model.named_parameters() if not torch.equal(before[name], p.detach())]
    assert changed, "two optimiser steps left every weight unchanged"

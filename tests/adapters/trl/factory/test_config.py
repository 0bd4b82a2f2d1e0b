"""``gem trl config --mode factory``: the rows and config it writes, and the printed command, which
trains with TRL's stock GRPOTrainer and GEM's environment_factory (a tiny random model, one step)."""

from __future__ import annotations

import json
import shlex

import yaml

from gem_adapters.trl.config import RunSettings, write_run
from gem_adapters.trl.train import build_trainer, main, parse
from tests.adapters.config_command import EASY, HARD
from tests.adapters.trl.factory.test_trainer import scripted_generate, tool_call
from tests.helpers import gem_command as gem


def test_factory_mode_writes_rows_for_reset_and_a_config_of_trls_tool_loop(tmp_path):
    out = tmp_path / "gtn"
    result = gem("trl", "config", "--env", EASY, "--env", HARD, "--model", "Qwen/Qwen3-0.6B", "--out", str(out),
                 "--train-size", "10", "--val-size", "4", "--n", "2", "--max-turns", "6", "--seed", "100",
                 "--mode", "factory", "--batch-size", "4", "--response-length", "1024")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert rows[0] == {"prompt": [{"role": "user", "content": ""}], "env_id": EASY, "seed": 100, "environment": EASY}
    assert rows[1]["environment"] == HARD
    config = yaml.safe_load((out / "gem_trl.yaml").read_text())
    assert not {"gem_estimator", "gem_gamma", "gem_episode_tokens"} & set(config)
    gem_args, grpo = parse([*shlex.split(result.stdout.strip().splitlines()[-1])[3:], "--bf16", "false"])
    assert (gem_args.gem_mode, gem_args.gem_env_ids, gem_args.gem_max_turns) == ("factory", [EASY, HARD], 6)
    assert grpo.max_completion_length == 1024 and grpo.max_tool_calling_iterations == 6


def test_the_printed_command_trains_with_the_stock_trainer(tmp_path, tiny_model_dir):
    from trl import GRPOTrainer

    written = write_run(RunSettings(env_ids=(EASY,), model=str(tiny_model_dir), out_dir=tmp_path, train_size=4,
                                    val_size=1, batch_size=2, rollouts_per_start=2, cpu=True, mode="factory",
                                    estimator="trl"))
    gem_args, grpo = parse([*shlex.split(written.command)[3:], "--max_steps", "1", "--max_completion_length", "64",
                            "--gradient_checkpointing", "false"])
    trainer = build_trainer(gem_args, grpo)
    assert type(trainer) is GRPOTrainer  # TRL's own class, no subclass
    trainer.model.generate = scripted_generate(trainer.processing_class,
                                               lambda text: "Done." if "<tool_response>" in text
                                               else tool_call("act", action="\\boxed{5}"))
    trainer.train()
    assert trainer.state.global_step == 1


def test_rollout_only_keys_and_unknown_ids_are_refused_by_the_train_command(tmp_path, capsys):
    written = write_run(RunSettings(env_ids=(EASY,), model="m", out_dir=tmp_path, train_size=4, val_size=1,
                                    batch_size=2, cpu=True, mode="factory", estimator="trl"))
    argv = shlex.split(written.command)[3:]
    assert main([*argv, "--gem_gamma", "0.5"]) == 2
    assert "gem_gamma" in capsys.readouterr().err
    assert main([*argv, "--gem_env_ids", "game:GuessTheNumbr-v0"]) == 2
    assert "GuessTheNumber" in capsys.readouterr().err

"""``gem trl config``: the files written, the printed command parsed by TRL's own TrlParser into
a GRPOConfig, and clear errors for bad input."""

from __future__ import annotations

import json
import shlex

import pytest

from gem_adapters.trl.config import RunSettings, write_run
from gem_adapters.trl.train import main, parse
from tests.adapters.config_command import EASY, HARD, config_run
from tests.helpers import gem_command as gem


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    return config_run(tmp_path_factory, "trl", "--batch-size", "4", "--max-tokens-per-turn", "256",
                      "--response-length", "1024", "--estimator", "grpo", "--gpus", "2", "--epochs", "3",
                      "--lr", "2e-6", "--wrappers", "episode_tracking")


def test_writes_datasets_and_a_trl_config(cli_run):
    out, result = cli_run
    assert sorted(p.name for p in out.iterdir()) == ["gem_trl.yaml", "train.jsonl", "val.jsonl"]
    rows = [json.loads(line) for path in ("train.jsonl", "val.jsonl") for line in (out / path).read_text().splitlines()]
    assert len(rows) == 14 and [row["env_id"] for row in rows[:3]] == [EASY, HARD, EASY]
    assert [row["seed"] for row in rows] == list(range(100, 114))
    assert rows[0]["prompt"][0]["role"] == "user" and "Guess The Number" in rows[0]["prompt"][0]["content"]


def test_the_printed_command_is_accelerate_over_the_gpus_and_trl_parses_its_config(cli_run):
    out, result = cli_run
    argv = shlex.split(result.stdout.strip().splitlines()[-1])
    assert argv[:3] == ["accelerate", "launch", "--num_processes=2"]
    assert argv[3:6] == ["-m", "gem_adapters.trl.train", "--config"]
    import yaml

    assert yaml.safe_load((out / "gem_trl.yaml").read_text())["bf16"] is True
    gem_args, grpo = parse([*argv[5:], "--bf16", "false"])  # GRPOConfig refuses bf16 without a GPU
    assert (gem_args.gem_estimator, gem_args.gem_gamma, gem_args.gem_max_turns) == ("grpo", 0.8, 6)
    assert gem_args.gem_wrappers == ["episode_tracking"] and gem_args.gem_episode_tokens == 1024
    assert gem_args.train_file == str(out / "train.jsonl")
    assert grpo.num_generations == 2 and grpo.per_device_train_batch_size == 4  # 4 starts x 2 over 2 GPUs
    assert grpo.max_completion_length == 256 and grpo.learning_rate == 2e-6 and grpo.num_train_epochs == 3
    assert grpo.beta == 0.0 and grpo.seed == 100
    _, overridden = parse([*argv[5:], "--bf16", "false", "--learning_rate", "1e-5"])
    assert overridden.learning_rate == 1e-5


def test_cpu_runs_in_one_python_process(tmp_path):
    written = write_run(RunSettings(env_ids=(EASY,), model="smollm2", out_dir=tmp_path, train_size=4, val_size=1,
                                    batch_size=2, cpu=True, gpus=4))
    argv = shlex.split(written.command)
    assert argv[1:] == ["-m", "gem_adapters.trl.train", "--config", str(tmp_path / "gem_trl.yaml")]
    _, grpo = parse(argv[3:])
    assert grpo.use_cpu and not grpo.bf16 and grpo.per_device_train_batch_size == 8


@pytest.mark.parametrize("args, message", [
    (["--env", "game:GuessTheNumbr-v0"], "GuessTheNumber"),
    (["--estimator", "rebnn"], "rebn"),
    (["--n", "1"], "--n 2"),
    (["--estimator", "trl", "--n", "1"], "--n 2"),
    (["--batch-size", "3", "--n", "3", "--gpus", "2"], "divisible"),
    (["--wrappers", "concat_chat"], "already keeps the whole conversation"),
    (["--mode", "factory", "--estimator", "rebn"], "--mode factory"),
    (["--mode", "factory", "--max-tokens-per-turn", "64"], "--max-tokens-per-turn"),
    (["--mode", "sideways"], "sideways"),
    (["--mode", "factory", "--gamma", "0.5"], "--gamma"),
])
def test_bad_input_is_a_clear_error(tmp_path, args, message):
    base = {"--env": EASY, "--model": "m", "--out": str(tmp_path / "run"), "--train-size": "8", "--val-size": "1",
            "--batch-size": "2"}
    for key in args[::2]:
        base.pop(key, None)
    result = gem("trl", "config", *[x for pair in base.items() for x in pair], *args)
    assert result.returncode != 0
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists()


def test_trls_own_estimator_is_accepted(tmp_path):
    written = write_run(RunSettings(env_ids=(EASY,), model="m", out_dir=tmp_path, train_size=4, val_size=1,
                                    batch_size=2, estimator="trl", cpu=True))
    gem_args, _ = parse(shlex.split(written.command)[3:])
    assert gem_args.gem_estimator == "trl"


def test_the_train_command_reports_a_missing_dataset_without_a_traceback(tmp_path, capsys):
    written = write_run(RunSettings(env_ids=(EASY,), model="m", out_dir=tmp_path, train_size=4, val_size=1,
                                    batch_size=2, cpu=True))
    (tmp_path / "train.jsonl").unlink()
    assert main(shlex.split(written.command)[3:]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_gem_lists_the_trl_command():
    result = gem("trl", "--help")
    assert result.returncode == 0 and "config" in result.stdout


def test_the_per_turn_trainer_refuses_a_trl_it_was_not_tested_with():
    from gem_adapters.trl.versions import check_factory_trl, check_subclass_trl
    from gem_core.errors import GemError

    assert check_subclass_trl("1.16.3") == "1.16.3"
    for version in ("1.15.0", "1.17.0", "0.29.0"):
        with pytest.raises(GemError, match=r"1\.16\.x only.*--mode factory"):
            check_subclass_trl(version)
    assert check_factory_trl("0.29.0") == "0.29.0"
    with pytest.raises(GemError, match="0.29.0"):
        check_factory_trl("0.28.0")

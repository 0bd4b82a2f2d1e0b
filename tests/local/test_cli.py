"""`gem train` and `gem eval` as commands: registration, flags, config files, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import gem_command

TINY_RUN = ("--steps", "1", "--episodes-per-step", "2", "--max-new-tokens", "4", "--threads", "1", "--no-progress")


def assert_clean_error(result, *fragments: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def test_the_commands_are_registered_through_the_plugin_hook():
    listing = gem_command("--help")
    assert "train" in listing.stdout and "eval" in listing.stdout and "view" in listing.stdout
    plugins = json.loads(gem_command("plugins", "--json").stdout)
    local = next(p for p in plugins if p["name"] == "local")
    assert sorted(local["registered"]["commands"]) == ["eval", "train", "view"]


def test_help_documents_the_flags():
    train = gem_command("train", "--help").stdout
    for flag in ("--env", "--model", "--estimator", "--gamma", "--episodes-per-step", "--steps", "--lr",
                 "--lora", "--config", "--resume", "--micro-batch-tokens", "--max-failed-share"):
        assert flag in train
    evaluate = gem_command("eval", "--help").stdout
    for flag in ("--env", "--episodes", "--samples", "--resume", "--model", "--base-url", "--api-key-env",
                 "--concurrency", "compare"):
        assert flag in evaluate
    assert "BASELINE CANDIDATE" in gem_command("eval", "compare", "--help").stdout
    assert "RUN_DIR" in gem_command("view", "--help").stdout


def test_train_runs_from_flags_and_a_config_file(tiny_model_dir: Path, tmp_path: Path):
    config = tmp_path / "run.yaml"
    config.write_text(f"model: {tiny_model_dir}\nestimator: reinforce\ngamma: 0.99\nlora: false\n")
    out = tmp_path / "run"
    with_progress = [flag for flag in TINY_RUN if flag != "--no-progress"]
    result = gem_command("train", "--config", str(config), "--output-dir", str(out), *with_progress)
    assert result.returncode == 0, result.stderr
    assert "Metrics:" in result.stdout and "learning_curve.png" in result.stdout
    # output is not a terminal: what each step is doing comes as lines, not a silent bar
    assert "playing a first batch" in result.stdout
    assert "step 1: playing" in result.stdout and "step 1: training on" in result.stdout
    saved = (out / "config.yaml").read_text()
    assert "estimator: reinforce" in saved and "gamma: 0.99" in saved and "steps: 1" in saved
    assert (out / "checkpoint" / "model" / "config.json").exists()

    # resume to a later step; the saved settings are reused
    again = gem_command("train", "--resume", str(out), "--steps", "2", "--no-progress")
    assert again.returncode == 0, again.stderr
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2]


def test_bad_input_gets_a_message_naming_the_fix(tiny_model_dir: Path, tmp_path: Path):
    assert_clean_error(gem_command("train", "--env", "game:GuessTheNumbr-v0-easy"),
                       "Did you mean: game:GuessTheNumber-v0-easy")
    assert_clean_error(gem_command("train", "--model", str(tmp_path / "missing")), "does not exist", "--model")
    bad = tmp_path / "bad.yaml"
    bad.write_text("stpes: 3\n")
    assert_clean_error(gem_command("train", "--config", str(bad)), "Unknown config key 'stpes'", "steps")
    assert_clean_error(gem_command("train", "--model", str(tiny_model_dir), "--micro-batch-tokens", "1000000000",
                                   "--output-dir", str(tmp_path / "big")), "--micro-batch-tokens")
    assert not (tmp_path / "big").exists()
    assert_clean_error(gem_command("train", "--estimator", "grpo", "--model", str(tiny_model_dir)), "--group-size")
    assert_clean_error(gem_command("eval", "--base-url", "http://127.0.0.1:9/v1"), "--base-url needs --model")

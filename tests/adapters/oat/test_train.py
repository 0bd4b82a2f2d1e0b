"""``gem oat config`` and the launcher: the printed command parses with oat's own tyro command line
into the settings asked for, a full oat command parses, and settings that cannot train are refused
before launch with the fix named."""

from __future__ import annotations

import shlex

import pytest

from tests.adapters.oat.conftest import EASY, oat_args
from tests.helpers import gem_command as gem

from gem_adapters.oat.train import check, main, parse
from gem_core.errors import GemError

HARD = "game:GuessTheNumber-v0-hard"


def printed_flags(*options: str) -> list[str]:
    result = gem("oat", "config", *options)
    assert result.returncode == 0, result.stderr
    argv = shlex.split(result.stdout.strip().splitlines()[-1])
    assert argv[1:3] == ["-m", "gem_adapters.oat.train"]
    return argv[3:]


def test_the_printed_command_round_trips_through_oats_command_line(tmp_path):
    flags = printed_flags("--env", EASY, "--env", HARD, "--model", "Qwen/Qwen3-0.6B", "--out", str(tmp_path),
                          "--estimator", "grpo", "--n", "4", "--gamma", "0.8", "--batch-size", "16", "--gpus", "2",
                          "--train-size", "64", "--seed", "100", "--max-turns", "6", "--max-tokens-per-turn", "256",
                          "--prompt-length", "512", "--response-length", "1024", "--lr", "2e-6", "--epochs", "3")
    args = parse(flags)
    assert args.env == (EASY, HARD) and args.pretrain == "Qwen/Qwen3-0.6B" and args.save_path == str(tmp_path)
    assert (args.estimator, args.num_samples, args.gamma, args.max_turns) == ("grpo", 4, 0.8, 6)
    assert (args.rollout_batch_size, args.rollout_batch_size_per_device, args.gpus) == (16, 8, 2)
    assert (args.train_size, args.seed, args.num_prompt_epoch, args.learning_rate) == (64, 100, 3, 2e-6)
    assert (args.generate_max_length, args.max_model_len) == (256, 1536)
    assert args.wrappers == "concat_chat" and args.algo == "PPO" and args.collocate
    assert args.oracle == "" and args.eval_steps == -1  # no reward model, no prompt-data evaluation
    check(args, visible_gpus=2)


def test_a_full_oat_command_parses_in_either_spelling():
    args = oat_args("--env", EASY, "--critic-type", "grpo", "--beta", "0.01", "--temperature", "0.7",
                    "--max_turns", "3", "--max-turns", "4", "--wrappers", "concat_chat,episode_tracking",
                    "--gpus", "1", "--rollout_batch_size", "8", "--rollout_batch_size_per_device", "8")
    assert (args.critic_type, args.beta, args.temperature, args.max_turns) == ("grpo", 0.01, 0.7, 4)
    check(args, visible_gpus=1)


@pytest.mark.parametrize(("flags", "message"), [
    (("--env", "game:GuessTheNumbr-v0-easy"), "GuessTheNumber-v0-easy"),
    (("--env", EASY, "--estimator", "rebm"), "rebn"),
    (("--env", EASY, "--wrappers", "concat_chatt"), "concat_chat"),
    ((), "--env ENV_ID"),
    (("--env", EASY, "--whiten_adv"), "drop --whiten_adv"),
    (("--env", EASY, "--critic_type", "ppo"), "--critic_type grpo"),
    (("--env", EASY, "--estimator", "grpo", "--num_samples", "1"), "--num_samples 2"),
    (("--env", EASY, "--max_turns", "0"), "max_turns"),
    (("--env", EASY, "--gpus", "2", "--collocate", "--rollout_batch_size", "16",
      "--rollout_batch_size_per_device", "16"), "multiple of the learner GPUs"),
    (("--env", EASY, "--gpus", "1", "--train_size", "4", "--rollout_batch_size_per_device", "8",
      "--rollout_batch_size", "8"), "less than one step"),
    (("--env", EASY, "--gpus", "4", "--rollout_batch_size", "16", "--rollout_batch_size_per_device", "4"),
     "more GPUs than this machine shows"),
])
def test_settings_that_cannot_train_are_refused_naming_the_fix(flags, message):
    with pytest.raises(GemError, match=message):
        check(oat_args(*flags), visible_gpus=1)


def test_the_launcher_stops_before_launch_with_a_clear_error(capsys):
    assert main(["--pretrain", "m", "--env", EASY, "--whiten_adv"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: --whiten_adv") and "Traceback" not in error


def test_the_launcher_on_a_machine_without_gpus_says_so(capsys):
    assert main(["--pretrain", "m", "--env", EASY, "--gpus", "1", "--rollout_batch_size", "16",
                 "--rollout_batch_size_per_device", "16"]) == 2  # this machine has no GPU
    assert "more GPUs than this machine shows (0)" in capsys.readouterr().err


def test_an_unknown_flag_is_oats_own_parse_error(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--pretrain", "m", "--env", EASY, "--estimater", "rebn"])
    assert exit.value.code == 2
    assert "--estimater" in capsys.readouterr().err

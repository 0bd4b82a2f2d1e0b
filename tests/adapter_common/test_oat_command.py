"""``gem oat config`` where oat is not installed: the command it prints, and what it refuses.
(The oat stage parses that command with oat's own command line: tests/adapters/oat.)"""

from __future__ import annotations

import shlex

import pytest

from tests.helpers import gem_command as gem

EASY = "game:GuessTheNumber-v0-easy"


def flags(argv: list[str]) -> dict[str, list[str]]:
    """``--flag values...`` groups of a command line."""
    grouped: dict[str, list[str]] = {}
    for arg in argv:
        if arg.startswith("--"):
            current = grouped.setdefault(arg, [])
        else:
            current.append(arg)
    return grouped


def test_prints_the_launcher_command_with_oats_flags_and_gems(tmp_path):
    result = gem("oat", "config", "--env", EASY, "--env", "game:Wordle-v0", "--model", "Qwen/Qwen3-0.6B",
                 "--out", str(tmp_path / "run"), "--n", "4", "--batch-size", "32", "--gpus", "2")
    assert result.returncode == 0, result.stderr
    argv = shlex.split(result.stdout.strip().splitlines()[-1])
    assert argv[1:3] == ["-m", "gem_adapters.oat.train"]
    given = flags(argv[3:])
    assert given["--env"] == [EASY, "game:Wordle-v0"] and given["--pretrain"] == ["Qwen/Qwen3-0.6B"]
    assert given["--wrappers"] == ["concat_chat"]  # oat prompts each turn with its observation alone
    assert given["--num_samples"] == ["4"] and given["--rollout_batch_size_per_device"] == ["16"]
    assert given["--estimator"] == ["rebn"] and given["--gamma"] == ["0.9"] and "--max_turns" not in given
    assert not (tmp_path / "run").exists()  # nothing to write: the launcher makes the starts
    assert "4 episode(s) each" in result.stderr


def test_history_wrappers_are_welcome_and_val_size_is_not_offered():
    result = gem("oat", "config", "--env", EASY, "--model", "m", "--wrappers", "concat_chat_on_reset,episode_tracking")
    assert result.returncode == 0, result.stderr
    assert "concat_chat_on_reset,episode_tracking" in result.stdout
    result = gem("oat", "config", "--env", EASY, "--model", "m", "--val-size", "8")
    assert result.returncode != 0 and "No such option '--val-size'" in result.stderr


@pytest.mark.parametrize(("options", "message"), [
    (("--gpus", "3"), "make --batch-size (64) a multiple of --gpus"),
    (("--nodes", "2"), "--num_groups N and --group_rank K"),
    (("--estimator", "grpo"), "set --n 2"),
    (("--wrappers", "concat_chatt"), "concat_chat"),
])
def test_bad_settings_get_a_clear_error(options, message):
    result = gem("oat", "config", "--env", EASY, "--model", "m", *options)
    assert result.returncode != 0 and message in result.stderr and "Traceback" not in result.stderr

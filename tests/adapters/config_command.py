"""What the tests of every adapter's ``gem <lib> config`` share: a run written for both
GuessTheNumber variants, and the bad input every such command refuses before writing anything."""

from __future__ import annotations

from tests.helpers import gem_command as gem

EASY, HARD = "game:GuessTheNumber-v0-easy", "game:GuessTheNumber-v0-hard"

#: (options, what the error names) for input every config command refuses.
BAD_INPUT = [
    (["--env", "game:GuessTheNumbr-v0-easy"], "GuessTheNumber-v0-easy"),
    (["--env", EASY, "--estimator", "rebm"], "rebn"),
    (["--env", EASY, "--wrappers", "concat_chat"], "concat_chat"),
    (["--env", EASY, "--estimator", "grpo"], "--n 2 or more"),
]


def config_run(tmp_path_factory, library: str, *options: str):
    """``gem LIBRARY config`` for both variants, the shared run sizes and ``options`` into a fresh
    folder; returns ``(folder, result)``, failing the test if the command failed."""
    out = tmp_path_factory.mktemp("cli") / "gtn"
    result = gem(library, "config", "--env", EASY, "--env", HARD, "--model", "Qwen/Qwen3-0.6B", "--out", str(out),
                 "--train-size", "10", "--val-size", "4", "--n", "2", "--gamma", "0.8", "--max-turns", "6",
                 "--seed", "100", *options)
    assert result.returncode == 0, result.stderr
    return out, result


def assert_refused_before_writing(library: str, tmp_path, options: list[str], message: str) -> None:
    """``gem LIBRARY config`` with ``options`` fails with ``message`` and no traceback, and writes nothing."""
    out = tmp_path / "run"
    result = gem(library, "config", "--model", "m", "--out", str(out), "--train-size", "4", "--val-size", "1",
                 "--batch-size", "2", *options)
    assert result.returncode != 0 and message in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


def assert_listed(library: str) -> None:
    """``gem --help`` and ``gem plugins`` name the adapter's command."""
    assert library in gem("--help").stdout
    assert library in gem("plugins").stdout

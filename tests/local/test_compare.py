"""`gem eval compare`: differences with bootstrap intervals, paired by start, and when they are noise."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from gem_core import GemError
from gem_core.episodes import Episode, Turn
from gem_trainer.evaluation.compare import compare_evaluations
from gem_trainer.evaluation.folder import append_episode
from tests.helpers import REPO, gem_command

FIXTURE = REPO / "tests" / "fixtures" / "eval-run"
GTN = "game:GuessTheNumber-v0-easy"


def evaluation(folder: Path, wins: dict[int, list[bool]], **settings) -> Path:
    """An evaluation folder whose start ``seed`` played one episode per entry of ``wins[seed]``:
    return 1 and success when won, else 0."""
    folder.mkdir(parents=True)
    saved = json.loads((FIXTURE / "settings.json").read_text())
    saved["settings"].update(settings)
    (folder / "settings.json").write_text(json.dumps(saved))
    for seed, outcomes in wins.items():
        for sample, won in enumerate(outcomes):
            turn = Turn("Guess.", "\\boxed{5}", 1.0 if won else 0.0, terminated=True, info={"success": won})
            append_episode(folder / "episodes.jsonl", Episode(GTN, seed, [turn]), sample)
    return folder


def test_a_clear_improvement_is_not_noise_and_an_equal_run_is(tmp_path: Path):
    starts = range(40)
    baseline = evaluation(tmp_path / "a", {s: [s % 4 == 0] for s in starts})  # 10 of 40 won
    better = evaluation(tmp_path / "b", {s: [s % 4 != 3] for s in starts})  # 30 of 40, every start a won too
    result = compare_evaluations(baseline, better, output_dir=tmp_path / "out", resamples=2000)
    [env] = result["environments"]
    assert env["paired"] and env["starts"] == [40, 40]
    success = env["success_rate"]
    assert success["baseline"] == 0.25 and success["candidate"] == 0.75 and success["difference"] == 0.5
    assert 0 < success["low"] < 0.5 < success["high"] <= 1 and not success["within_noise"]
    # the paired interval is the bootstrap of the per-start differences, by hand
    differences = np.array([(s % 4 != 3) - (s % 4 == 0) for s in starts], dtype=float)
    picks = np.random.default_rng(0).integers(0, 40, size=(2000, 40))
    assert success["low"] == pytest.approx(np.percentile(differences[picks].mean(axis=1), 2.5))
    assert (tmp_path / "out" / "compare.png").read_bytes()[:4] == b"\x89PNG"

    same = compare_evaluations(baseline, baseline, output_dir=tmp_path / "same")
    [env] = same["environments"]
    assert env["success_rate"]["difference"] == 0 and env["success_rate"]["within_noise"]


def test_different_starts_are_compared_unpaired_and_differing_settings_are_named(tmp_path: Path):
    baseline = evaluation(tmp_path / "a", {s: [s % 2 == 0] * 2 for s in range(10)}, temperature=0.0)
    other = evaluation(tmp_path / "b", {s: [s % 2 == 1, True] for s in range(100, 106)}, temperature=1.0)
    result = compare_evaluations(baseline, other, output_dir=tmp_path / "out")
    [env] = result["environments"]
    assert not env["paired"] and env["starts"] == [10, 6] and env["episodes"] == [20, 12]
    assert env["success_rate"]["candidate"] == pytest.approx(0.75)
    assert result["settings_differ"] == {"temperature": [0.0, 1.0]}


def test_the_command_prints_the_table_and_says_what_is_noise(tmp_path: Path):
    baseline = tmp_path / "a"
    shutil.copytree(FIXTURE, baseline)
    result = gem_command("eval", "compare", str(baseline), str(FIXTURE), "--output-dir", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert GTN in result.stdout and "within noise" in result.stdout
    assert (tmp_path / "out" / "compare.json").exists()
    bad = gem_command("eval", "compare", str(baseline), str(tmp_path))
    assert bad.returncode != 0 and "not the folder of a `gem eval` run" in bad.stderr and "Traceback" not in bad.stderr
    mixed = gem_command("eval", "--temperature", "1", "compare", str(baseline), str(FIXTURE))
    assert mixed.returncode != 0 and "takes its own options" in mixed.stderr


def test_no_environment_in_common_is_named(tmp_path: Path):
    baseline = evaluation(tmp_path / "a", {0: [True]})
    lines = (baseline / "episodes.jsonl").read_text().replace(GTN, "game:Wordle-v0-easy")
    other = tmp_path / "b"
    shutil.copytree(baseline, other)
    (other / "episodes.jsonl").write_text(lines)
    with pytest.raises(GemError, match="no environment in common"):
        compare_evaluations(baseline, other, output_dir=tmp_path / "out")

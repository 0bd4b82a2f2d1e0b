"""Failed episodes in `gem eval`: counted apart from lost ones, reported by kind, left out of the
scores (success, pass@k, best-of-k, compare), and played again by `gem eval --resume`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gem_core.episodes import Episode, Failure, Turn
from gem_trainer.evaluation.compare import compare_evaluations
from gem_trainer.evaluation.evaluate import EvalSettings, run_evaluation
from gem_trainer.evaluation.folder import append_episode
from gem_trainer.evaluation.scores import summarise
from tests.local.envs import BROKEN_ID, register_broken
from tests.local.test_compare import FIXTURE, GTN


@pytest.fixture(autouse=True)
def _broken_env():
    register_broken([])
    yield
    register_broken([])


def scores(report: dict) -> list[dict]:
    return [{k: v for k, v in env.items() if k not in ("seconds", "quarantined")} for env in report["environments"]]


def latest_episodes(folder: Path) -> dict[tuple, dict]:
    found = {}
    for line in (folder / "episodes.jsonl").read_text().splitlines():
        record = json.loads(line)
        found[record["env_id"], record["seed"], record.pop("sample")] = record
    return found


def test_failed_episodes_are_counted_apart_and_a_resume_plays_them_again(tiny_model_dir: Path, tmp_path: Path):
    from rich.console import Console

    settings = dict(envs=[BROKEN_ID], model=str(tiny_model_dir), episodes=3, samples=2, temperature=1.0,
                    max_new_tokens=5, concurrency=3, device="cpu", progress=False)
    straight = run_evaluation(EvalSettings(**settings, output_dir=str(tmp_path / "straight")))

    register_broken([1])  # both samples of start 1 return a NaN reward on their second turn
    out = tmp_path / "broken"
    printed = io.StringIO()
    report = run_evaluation(EvalSettings(**settings, output_dir=str(out)), console=Console(file=printed, width=300))
    [env] = report["environments"]
    assert env["failed"] == 2 and env["failed_kinds"] == {"malformed": 2} and env["failed_rate"] == pytest.approx(1 / 3)
    assert env["episodes"] == 4 and env["starts"] == 2  # the scores are over the valid episodes
    assert [e["seed"] for e in env["failed_examples"]] == [1, 1] and "nan" in env["failed_examples"][0]["error"]
    valid = [e for (_, seed, _), e in latest_episodes(tmp_path / "straight").items() if seed != 1]
    returns = [sum(t["reward"] for t in e["turns"]) for e in valid]
    assert env["mean_return"] == pytest.approx(sum(returns) / 4)
    assert env["pass_at_k"]["1"] == pytest.approx(env["success_rate"])
    said = " ".join(printed.getvalue().split())
    assert "failed" in said and "2 (33.3%)" in said  # the table's column
    assert f"{BROKEN_ID}: 2 episode(s) failed (2 malformed), not the agent's doing" in said
    assert f"`gem eval --resume {out}` plays them again" in said

    register_broken([])  # the environment fixed
    printed = io.StringIO()
    resumed = run_evaluation(EvalSettings(output_dir=str(out), progress=False), resume=True,
                             console=Console(file=printed, width=300))
    assert "4 episode(s) played, 2 to play (2 of them failed before: they are played again)" in printed.getvalue()
    assert scores(resumed) == scores(straight)
    assert latest_episodes(out) == latest_episodes(tmp_path / "straight")
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 8  # the failed plays are kept, replaced


def episode(seed: int, won: bool, failure: Failure | None = None) -> Episode:
    turn = Turn("Guess.", "\\boxed{5}", 1.0 if won else 0.0, terminated=True, info={"success": won})
    return Episode(GTN, seed, [turn], failure=failure)


def test_a_failed_episode_scores_nothing_even_where_it_looks_won():
    broken = Failure("sandbox", "SandboxFailure: the container died", "step", 0)
    played = [episode(0, True), episode(0, False), episode(1, True, broken), episode(1, False), episode(2, True, broken)]
    report = summarise(GTN, played, seconds=0.0)
    assert (report.episodes, report.failed, report.starts, report.samples) == (3, 2, 2, 2)
    assert report.success_rate == pytest.approx(1 / 3) and report.mean_return == pytest.approx(1 / 3)
    # pass@2 is over the starts with two valid samples: start 0 alone
    assert report.pass_at_k == {"1": pytest.approx((1 / 2 + 0) / 2), "2": 1.0}
    assert report.failed_kinds == {"sandbox": 2} and report.failed_rate == pytest.approx(2 / 5)

    none_valid = summarise(GTN, [episode(0, True, broken)], seconds=0.0)
    assert none_valid.episodes == 0 and none_valid.failed == 1 and none_valid.success_rate == 0.0


def test_compare_leaves_failed_episodes_out(tmp_path: Path):
    broken = Failure("error", "RuntimeError: the grader crashed", "step", 0)
    folders = []
    for name, failed_wins in (("a", False), ("b", True)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "settings.json").write_text((FIXTURE / "settings.json").read_text())
        for seed in range(20):
            append_episode(folder / "episodes.jsonl", episode(seed, seed % 2 == 0), 0)
            if failed_wins:  # failed episodes that would look like wins, were they counted
                append_episode(folder / "episodes.jsonl", episode(seed, True, broken), 1)
        folders.append(folder)
    result = compare_evaluations(*folders, output_dir=tmp_path / "out", resamples=200)
    [env] = result["environments"]
    assert env["episodes"] == [20, 20] and env["success_rate"]["difference"] == 0.0

"""`gem eval` runs: samples per start and pass@k, a killed evaluation resumed, a `gem train`
checkpoint played with the settings it trained with."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gem_core import GemError
from gem_trainer.evaluation.evaluate import EvalSettings, run_evaluation
from tests.helpers import gem_command
from tests.local.chat_server import ChatServer

GTN = "game:GuessTheNumber-v0-easy"


@pytest.fixture(scope="module")
def server(tiny_model_dir: Path):
    with ChatServer(tiny_model_dir, "tiny-chat", delay=0.2) as running:
        yield running


def episodes_of(folder: Path) -> dict[tuple, dict]:
    """The episodes of an evaluation folder by (environment, seed, sample)."""
    found = {}
    for line in (folder / "episodes.jsonl").read_text().splitlines():
        record = json.loads(line)
        found[record["env_id"], record["seed"], record.pop("sample")] = record
    return found


def scores(report: dict) -> list[dict]:
    """A report's scores, without what depends on the run (time, quarantined slots)."""
    return [{k: v for k, v in env.items() if k not in ("seconds", "quarantined")} for env in report["environments"]]


def test_samples_play_each_start_k_times_and_the_report_gives_pass_at_k(server: ChatServer, tmp_path: Path):
    from tests.local.envs import ENV_ID, register_once

    register_once()
    server.requests.clear()
    report = run_evaluation(EvalSettings(envs=[ENV_ID], model="tiny-chat", base_url=server.base_url, episodes=3,
                                         samples=4, temperature=1.0, max_new_tokens=6, concurrency=4,
                                         output_dir=str(tmp_path), progress=False, api_key_env="NO_KEY_NEEDED"))
    [env] = report["environments"]
    played = episodes_of(tmp_path)
    assert sorted(played) == [(ENV_ID, seed, sample) for seed in range(3) for sample in range(4)]
    assert env["episodes"] == 12 and env["starts"] == 3 and env["samples"] == 4
    assert list(env["pass_at_k"]) == ["1", "2", "3", "4"]
    assert env["pass_at_k"]["1"] == pytest.approx(env["success_rate"])
    assert all(a <= b for a, b in zip(list(env["pass_at_k"].values()), list(env["pass_at_k"].values())[1:]))
    # the samples of a start differ: each request carried a seed of its own
    seeds = [r["seed"] for r in server.requests]
    assert len(seeds) == len(set(seeds)) == sum(len(e["turns"]) for e in played.values())
    first_actions = {(seed, sample): e["turns"][0]["action"] for (_, seed, sample), e in played.items()}
    assert len(set(first_actions.values())) > 3


def test_the_same_settings_play_the_same_episodes_whatever_the_batch(tiny_model_dir: Path, tmp_path: Path):
    from tests.local.envs import ENV_ID, register_once

    register_once()
    runs = []
    for concurrency in (1, 5):
        out = tmp_path / f"concurrency-{concurrency}"
        runs.append(run_evaluation(EvalSettings(envs=[ENV_ID], model=str(tiny_model_dir), episodes=3, samples=2,
                                                temperature=1.0, max_new_tokens=5, concurrency=concurrency,
                                                device="cpu", output_dir=str(out), progress=False)))
    assert episodes_of(tmp_path / "concurrency-1") == episodes_of(tmp_path / "concurrency-5")
    assert scores(runs[0]) == scores(runs[1])


def test_a_killed_evaluation_resumed_equals_an_uninterrupted_one(server: ChatServer, tmp_path: Path):
    settings = ["--base-url", server.base_url, "--model", "tiny-chat", "--env", GTN, "--env", "game:GuessTheNumber-v0",
                "--episodes", "6", "--samples", "2", "--temperature", "1", "--max-new-tokens", "6",
                "--concurrency", "2", "--no-progress"]
    whole = tmp_path / "whole"
    assert gem_command("eval", *settings, "--output-dir", str(whole)).returncode == 0

    killed = tmp_path / "killed"
    process = subprocess.Popen([sys.executable, "-m", "gem_core.cli", "eval", *settings, "--output-dir", str(killed)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    episodes = killed / "episodes.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not episodes.exists() or len(episodes.read_text().splitlines()) < 5):
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)  # no report, no clean-up: as a machine that goes away
    process.wait(timeout=30)
    before = episodes_of(killed)
    assert 5 <= len(before) < 24 and not (killed / "report.json").exists()
    with open(episodes, "a") as f:
        f.write('{"env_id": "game:Guess')  # a line the kill cut short

    resumed = gem_command("eval", "--resume", str(killed), "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(before)} episode(s) played, {24 - len(before)} to play" in resumed.stdout
    report, uninterrupted = (json.loads((folder / "report.json").read_text()) for folder in (killed, whole))
    assert scores(report) == scores(uninterrupted)
    assert episodes_of(killed) == episodes_of(whole)  # every episode, turn for turn
    assert {k: before[k] for k in before} == {k: episodes_of(killed)[k] for k in before}  # none played again


def test_a_resume_with_other_settings_is_refused_and_a_used_folder_is_not_overwritten(server: ChatServer,
                                                                                      tmp_path: Path):
    out = tmp_path / "eval"
    first = gem_command("eval", "--base-url", server.base_url, "--model", "tiny-chat", "--env", GTN, "--episodes", "2",
                        "--max-new-tokens", "4", "--output-dir", str(out), "--no-progress")
    assert first.returncode == 0, first.stderr
    refused = gem_command("eval", "--resume", str(out), "--temperature", "0.7", "--episodes", "2")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "--temperature 0.7 (it played 0.0)" in refused.stderr and "--episodes" not in refused.stderr
    again = gem_command("eval", "--base-url", server.base_url, "--model", "tiny-chat", "--env", GTN,
                        "--output-dir", str(out))
    assert again.returncode != 0 and f"continue it with --resume {out}" in again.stderr
    missing = gem_command("eval", "--resume", str(tmp_path))
    assert missing.returncode != 0 and "not the folder of a `gem eval` run" in missing.stderr
    # what may change on a resume: how it runs
    done = gem_command("eval", "--resume", str(out), "--concurrency", "1", "--timeout", "30", "--no-progress")
    assert done.returncode == 0 and "2 episode(s) played, 0 to play" in done.stdout


def test_a_gem_train_checkpoint_is_scored_with_the_settings_it_trained_with(tiny_model_dir: Path, tmp_path: Path):
    from gem_trainer.cli import learned_commands
    from gem_trainer.config import build_config
    from gem_trainer.training.trainer import Trainer

    config = build_config({"model": str(tiny_model_dir), "envs": ["game:GuessTheNumber-v0"], "steps": 1,
                           "episodes_per_step": 2, "max_new_tokens": 5, "temperature": 0.7, "top_p": 0.9,
                           "device": "cpu", "threads": 1, "output_dir": str(tmp_path / "run")})
    run = Trainer(config, progress=False).run()
    checkpoint = run.checkpoint / "model"
    assert json.loads((checkpoint / "trained_with.json").read_text()) == {
        "envs": ["game:GuessTheNumber-v0"], "max_new_tokens": 5, "temperature": 0.7, "top_p": 0.9,
        "wrappers": "concat_chat"}

    # the commands the end of training prints: the checkpoint, the model it started from, the difference
    trained, start, compare = learned_commands(run.output_dir, checkpoint, config, episodes=4)
    assert "--temperature 0.7" not in trained and "--temperature 0.7" in start and "--max-new-tokens 5" in start
    results = []
    for command in (trained, start, compare):
        program, *args = shlex.split(command)
        assert program == "gem"
        results.append(gem_command(*args))
    for result in results:
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
    output = results[0].stdout + results[0].stderr
    assert "Playing the checkpoint as it trained" in output and "temperature 0.7" in output
    assert "Loading weights" not in output and "Warning" not in output  # transformers and peft keep quiet
    report = json.loads((run.output_dir / "eval" / "report.json").read_text())
    assert {k: report["settings"][k] for k in ("envs", "max_new_tokens", "temperature", "top_p")} == {
        "envs": ["game:GuessTheNumber-v0"], "max_new_tokens": 5, "temperature": 0.7, "top_p": 0.9}
    assert report["settings_from"]["temperature"] == "checkpoint" and report["settings_from"]["episodes"] == "given"
    base = json.loads((run.output_dir / "eval-start" / "report.json").read_text())
    assert {k: base["settings"][k] for k in ("envs", "max_new_tokens", "temperature", "top_p")} == {
        k: report["settings"][k] for k in ("envs", "max_new_tokens", "temperature", "top_p")}
    assert "within noise" in results[2].stdout or "better" in results[2].stdout or "worse" in results[2].stdout

    # a flag overrides, and the report says so
    greedy = run_evaluation(EvalSettings(model=str(checkpoint), temperature=0.0, episodes=1, device="cpu",
                                         output_dir=str(tmp_path / "greedy"), progress=False))
    assert greedy["settings"]["temperature"] == 0.0 and greedy["settings_from"]["temperature"] == "given"
    assert greedy["settings"]["max_new_tokens"] == 5 and greedy["settings_from"]["max_new_tokens"] == "checkpoint"
    # any other model folder: the defaults
    plain = run_evaluation(EvalSettings(model=str(tiny_model_dir), episodes=1, device="cpu", max_new_tokens=3,
                                        output_dir=str(tmp_path / "plain"), progress=False))
    assert plain["settings"]["temperature"] == 0.0 and plain["settings_from"]["temperature"] == "default"


def test_a_broken_trained_with_file_is_named(tiny_model_dir: Path, tmp_path: Path):
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "trained_with.json").write_text("{not json")
    with pytest.raises(GemError, match="trained_with.json is not valid JSON"):
        run_evaluation(EvalSettings(model=str(folder), output_dir=str(tmp_path / "eval"), progress=False))

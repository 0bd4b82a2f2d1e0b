"""`gem eval` against a real OpenAI-compatible server on localhost, and against a local model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gem_core import GemError, UnknownEnvError
from gem_trainer.evaluation.evaluate import EndpointError, EvalSettings, MessagesTemplate, run_evaluation
from tests.helpers import gem_command
from tests.local.chat_server import ChatServer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
GTN = "game:GuessTheNumber-v0-easy"


@pytest.fixture(scope="module")
def server(tiny_model_dir: Path):
    with ChatServer(tiny_model_dir, "tiny-chat", api_key="sk-test") as running:
        yield running


def test_messages_template_renders_the_conversation_as_json():
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert json.loads(MessagesTemplate().apply_chat_template(messages)) == messages


def test_gem_eval_scores_an_endpoint_concurrently(server: ChatServer, tmp_path: Path):
    out = tmp_path / "eval"
    result = gem_command(
        "eval", "--base-url", server.base_url, "--model", "tiny-chat", "--env", GTN, "--env", "game:GuessTheNumber-v0",
        "--episodes", "6", "--concurrency", "3", "--max-new-tokens", "8", "--output-dir", str(out), "--no-progress",
        env={"OPENAI_API_KEY": "sk-test"},
    )
    assert result.returncode == 0, result.stderr
    assert "success" in result.stdout and "tiny-chat" in result.stdout  # the terminal table

    report = json.loads((out / "report.json").read_text())
    assert [e["env_id"] for e in report["environments"]] == [GTN, "game:GuessTheNumber-v0"]
    for env in report["environments"]:
        assert env["episodes"] == 6
        assert 0 <= env["success_rate"] <= 1 and env["turns_per_episode"] >= 1
    assert (out / "report.png").read_bytes()[:8] == PNG_MAGIC
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 12
    assert sorted(e["seed"] for e in episodes if e["env_id"] == GTN) == list(range(6))

    assert server.max_in_flight >= 2  # requests of concurrent episodes overlapped
    request = server.requests[-1]
    assert request["model"] == "tiny-chat" and request["max_tokens"] == 8 and request["temperature"] == 0.0
    assert request["messages"][0]["role"] == "user" and "Guess" in request["messages"][0]["content"]


def test_later_turns_send_the_whole_conversation(server: ChatServer, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch):
    # the tiny model never writes a valid guess, so the games end after one turn: use LetterShare
    from tests.local.envs import ENV_ID, register_once

    register_once()
    server.requests.clear()
    monkeypatch.setenv("GEM_TEST_KEY", "sk-test")
    report = run_evaluation(EvalSettings(envs=[ENV_ID], model="tiny-chat", base_url=server.base_url, episodes=2,
                                         concurrency=2, max_new_tokens=4, output_dir=str(tmp_path),
                                         progress=False, api_key_env="GEM_TEST_KEY"))
    assert report["environments"][0]["turns_per_episode"] == 2
    second = [r for r in server.requests if len(r["messages"]) == 3]
    assert len(second) == 2
    assert [m["role"] for m in second[0]["messages"]] == ["user", "assistant", "user"]


def test_endpoint_mistakes_are_named(server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    settings = dict(envs=[GTN], episodes=1, concurrency=1, max_new_tokens=4, output_dir=str(tmp_path), progress=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(EndpointError, match="does not serve model 'gpt-x'.*tiny-chat"):
        run_evaluation(EvalSettings(model="gpt-x", base_url=server.base_url, **settings))
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    with pytest.raises(EndpointError, match="rejected the API key.*OPENAI_API_KEY"):
        run_evaluation(EvalSettings(model="tiny-chat", base_url=server.base_url, **settings))
    with pytest.raises(EndpointError, match="Cannot reach"):
        run_evaluation(EvalSettings(model="tiny-chat", base_url="http://127.0.0.1:9/v1", **settings))
    with pytest.raises(GemError, match="--base-url needs --model"):
        run_evaluation(EvalSettings(base_url=server.base_url, **settings))
    with pytest.raises(UnknownEnvError, match="Did you mean"):
        run_evaluation(EvalSettings(model="tiny-chat", base_url=server.base_url,
                                    **{**settings, "envs": ["game:GuessTheNumbr-v0-easy"]}))


def test_eval_scores_a_local_model_folder(tiny_model_dir: Path, tmp_path: Path):
    report = run_evaluation(EvalSettings(envs=[GTN], model=str(tiny_model_dir), episodes=4, concurrency=4,
                                         max_new_tokens=6, device="cpu", output_dir=str(tmp_path), progress=False))
    env = report["environments"][0]
    assert env["episodes"] == 4
    # a random model writes no \boxed{} guess: every episode ends on the format-error penalty
    assert env["format_error_rate"] == 1.0 and env["mean_return"] == pytest.approx(-0.1)
    assert (tmp_path / "report.png").exists()


def test_eval_scores_a_lora_checkpoint_of_gem_train(tiny_model_dir: Path, tmp_path: Path):
    from gem_trainer.config import build_config
    from gem_trainer.training.trainer import Trainer

    run = Trainer(build_config({"model": str(tiny_model_dir), "steps": 1, "episodes_per_step": 2,
                                "max_new_tokens": 4, "device": "cpu", "output_dir": str(tmp_path / "run")}),
                  progress=False).run()
    checkpoint = run.checkpoint / "model"
    assert (checkpoint / "adapter_config.json").exists()
    report = run_evaluation(EvalSettings(envs=[GTN], model=str(checkpoint), episodes=2, concurrency=2,
                                         max_new_tokens=4, device="cpu", output_dir=str(tmp_path / "eval"),
                                         progress=False))
    assert report["environments"][0]["episodes"] == 2
    assert report["policy"] == str(checkpoint)


def test_a_slot_that_never_starts_is_quarantined_and_reported(server: ChatServer, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch):
    from tests.local.envs import FLAKY_ID, register_flaky_once

    register_flaky_once()
    monkeypatch.setenv("GEM_TEST_KEY", "sk-test")
    report = run_evaluation(EvalSettings(envs=[FLAKY_ID], model="tiny-chat", base_url=server.base_url, episodes=6,
                                         concurrency=3, max_new_tokens=4, output_dir=str(tmp_path),
                                         progress=False, api_key_env="GEM_TEST_KEY"))
    env = report["environments"][0]
    assert env["episodes"] == 6
    # the starts it cannot make (seeds 1, 4, ...) went to whichever slot took them; three in a row
    # took one slot out of service, and other seeds took their places
    [quarantined] = env["quarantined"]
    assert len(quarantined["seeds"]) == 3 and all(seed % 3 == 1 for seed in quarantined["seeds"])
    assert f"no task for seed {quarantined['seeds'][-1]}" in quarantined["errors"][-1]
    played = [json.loads(line)["seed"] for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert len(played) == 6 and all(seed % 3 != 1 for seed in played)


def test_progress_lines_and_episodes_as_they_finish_when_output_is_not_a_terminal(server: ChatServer, tmp_path: Path):
    out = tmp_path / "eval"
    result = gem_command("eval", "--base-url", server.base_url, "--model", "tiny-chat", "--env", GTN,
                         "--episodes", "4", "--concurrency", "2", "--max-new-tokens", "4",
                         "--output-dir", str(out), env={"OPENAI_API_KEY": "sk-test"})
    assert result.returncode == 0, result.stderr
    progress = [line for line in result.stdout.splitlines() if line.startswith(f"{GTN}: ")]
    assert [line.split()[1] for line in progress] == ["1/4", "2/4", "3/4", "4/4"]
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 4


@pytest.fixture(scope="module")
def slow_server(tiny_model_dir: Path):
    with ChatServer(tiny_model_dir, "tiny-chat", delay=1.0) as running:
        yield running


def test_sigterm_writes_the_report_of_the_episodes_that_finished(slow_server: ChatServer, tmp_path: Path):
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "eval"
    command = [sys.executable, "-m", "gem_core.cli", "eval", "--base-url", slow_server.base_url, "--model",
               "tiny-chat", "--env", GTN, "--episodes", "40", "--concurrency", "2", "--max-new-tokens", "4",
               "--output-dir", str(out), "--no-progress"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    episodes = out / "episodes.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not episodes.exists() or len(episodes.read_text().splitlines()) < 2):
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1 and "Interrupted" in stderr and "Traceback" not in stderr, stderr
    report = json.loads((out / "report.json").read_text())
    written = len(episodes.read_text().splitlines())
    assert report["interrupted"] is True and 2 <= written < 40
    assert report["environments"][0]["episodes"] == written  # every finished episode is counted, none lost


def test_a_request_past_the_timeout_stops_with_a_clear_error(slow_server: ChatServer, tmp_path: Path):
    result = gem_command("eval", "--base-url", slow_server.base_url, "--model", "tiny-chat", "--env", GTN,
                         "--episodes", "1", "--max-new-tokens", "4", "--timeout", "0.3",
                         "--output-dir", str(tmp_path / "eval"), "--no-progress")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "no answer within 0.3 s" in result.stderr and "Raise --timeout" in result.stderr, result.stderr


def test_the_report_plot_fits_its_title_and_any_number_of_environments(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path):
    import gem_trainer.evaluation.evaluate as evaluate

    drawn = []
    monkeypatch.setattr(evaluate, "save_figure", lambda fig, path, title: drawn.append((fig, title)) or path)
    long_title = "/root/.cache/gem-adapters/models/SmolLM2-135M-Instruct at http://127.0.0.1:8000/v1 " * 2
    for count in (1, 8):
        reports = [evaluate.EnvReport(f"rg:task_{i}", 16, 0.1 * i - 0.2, 0.05, 0.5, 1.0, 0.0, 1.0)
                   for i in range(count)]
        evaluate.plot_report(reports, tmp_path / "report.png", title=long_title)
    (one, title), (many, _) = drawn
    assert all(len(line) <= 100 for line in title.splitlines()) and len(title.splitlines()) >= 2
    assert many.get_figheight() > one.get_figheight()  # a row per environment
    labels = [label.get_text() for label in many.axes[0].get_yticklabels()]
    assert labels[0] == "rg:task_0\n16 episodes" and len(labels) == 8


def test_eval_reports_the_win_rate_against_a_games_bot(server: ChatServer, tmp_path: Path):
    out = tmp_path / "versus"
    result = gem_command(
        "eval", "--base-url", server.base_url, "--model", "tiny-chat", "--env", "multiagent:TicTacToe-v0-vs-bot",
        "--episodes", "4", "--max-new-tokens", "8", "--output-dir", str(out), "--no-progress",
        env={"OPENAI_API_KEY": "sk-test"},
    )
    assert result.returncode == 0, result.stderr
    assert "multiagent:TicTacToe-v0-vs-bot: win rate" in result.stdout
    (report,) = json.loads((out / "report.json").read_text())["environments"]
    assert set(report["outcomes"]) == {"win", "draw", "loss"} and sum(report["outcomes"].values()) == 1
    assert report["success_rate"] == report["outcomes"]["win"]

"""`--report-to`: `gem train` and `gem eval` log to TensorBoard, W&B, trackio and MLflow, offline and
in the run folder, and each tracker's own reader gives back what metrics.jsonl and report.json hold;
a resumed run continues the same tracker runs; bad names, missing packages and a tracker that fails
mid-run are handled."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gem_core import GemError, UnknownNameError
from gem_core.errors import MissingDependencyError
from gem_trainer.config import build_config
from gem_trainer.trackers import STATE_FILE, TRACKERS, markdown_table, parse_report_to, wandb_key_set
from tests.local.envs import ENV_ID, register_once

ALL = ",".join(TRACKERS)
GTN = "game:GuessTheNumber-v0-easy"
#: What a tracker keeps of the metrics: floats (TensorBoard keeps float32).
CLOSE = {"rel": 1e-6, "abs": 1e-6}
#: The trackers' own variables, which would send a test's values elsewhere.
TRACKER_VARIABLES = ("WANDB_API_KEY", "WANDB_MODE", "WANDB_PROJECT", "WANDB_BASE_URL", "TRACKIO_DIR",
                     "TRACKIO_SERVER_URL", "TRACKIO_SPACE_ID", "TRACKIO_PROJECT", "MLFLOW_TRACKING_URI",
                     "MLFLOW_EXPERIMENT_NAME")

for module in ("tensorboard", "wandb", "trackio", "mlflow"):
    pytest.importorskip(module, reason=f"--report-to {module} needs gem-adapters[{module}]")


def offline_env(home: Path) -> dict[str, str]:
    """The environment of a `gem` process with no tracker account, server or folder set, and a
    home of its own (W&B keeps its settings and staging files there)."""
    env = {k: v for k, v in os.environ.items() if k not in TRACKER_VARIABLES}
    home.mkdir(parents=True, exist_ok=True)
    return {**env, "HOME": str(home), "WANDB_CONFIG_DIR": str(home / "wandb-config"),
            "WANDB_CACHE_DIR": str(home / "wandb-cache"), "WANDB_DATA_DIR": str(home / "wandb-data")}


def gem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "gem_core.cli", *args], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done


# ---- each tracker's own reader --------------------------------------------------------------------


def tensorboard_scalars(folder: Path) -> tuple[dict[str, dict[int, float]], dict[str, list[str]]]:
    """TensorBoard's event reader: every scalar by tag and step, and the tags of each kind."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={"images": 0, "scalars": 0, "tensors": 0})
    events.Reload()
    tags = events.Tags()
    scalars = {tag: {e.step: e.value for e in events.Scalars(tag)} for tag in tags["scalars"]}
    return scalars, tags


def tensorboard_text(folder: Path, tag: str) -> list[tuple[int, str]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={"tensors": 0})
    events.Reload()
    return [(e.step, e.tensor_proto.string_val[0].decode()) for e in events.Tensors(tag)]


def wandb_records(run_folder: Path) -> list[list[dict]]:
    """W&B's own reader of its offline transaction logs (``wandb leet inspect --json``): the
    records of each ``.wandb`` file of the run folder, oldest first."""
    files = sorted((run_folder / "wandb").glob("offline-run-*/run-*.wandb"))
    assert files, f"no offline W&B run in {run_folder}"
    wandb_cli = Path(sys.executable).with_name("wandb")
    logs = []
    for file in files:
        done = subprocess.run([str(wandb_cli), "leet", "inspect", "--json", str(file)], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        logs.append([json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")])
    return logs


def wandb_history(records: list[dict]) -> dict[str, dict[int, object]]:
    history: dict[str, dict[int, object]] = {}
    for record in records:
        if record.get("type") == "history":
            step = record["history"]["step"]["num"]
            for key, value in record["history"]["item"].items():
                history.setdefault(key, {})[int(step)] = value
    return history


def trackio_logs(store: Path, project: str, run: str) -> tuple[list[dict], dict]:
    """trackio's own store API (SQLiteStorage), in a process of its own: trackio reads its folder
    once per process."""
    code = ("import json, sys; from trackio.sqlite_storage import SQLiteStorage as S; "
            "print(json.dumps([S.get_logs(sys.argv[1], sys.argv[2]), S.get_run_config(sys.argv[1], sys.argv[2])]))")
    done = subprocess.run([sys.executable, "-c", code, project, run], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TRACKIO_DIR": str(store)})
    assert done.returncode == 0, done.stderr
    logs, config = json.loads(done.stdout.splitlines()[-1])
    return logs, config


def trackio_series(logs: list[dict]) -> dict[str, dict[int, object]]:
    series: dict[str, dict[int, object]] = {}
    for entry in logs:
        for key, value in entry.items():
            if key not in ("step", "timestamp"):
                series.setdefault(key, {})[int(entry["step"])] = value
    return series


def mlflow_run(uri: str, run_id: str):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    return client, client.get_run(run_id)


def mlflow_series(client, run_id: str, key: str) -> dict[int, float]:
    return {m.step: m.value for m in client.get_metric_history(run_id, key)}


# ---- the round trips ------------------------------------------------------------------------------


def train_values(records: list[dict]) -> dict[str, dict[int, float]]:
    """What every tracker must hold of metrics.jsonl: ``train/<metric>`` per step."""
    expected: dict[str, dict[int, float]] = {}
    for record in records:
        for key, value in record.items():
            if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
                expected.setdefault(f"train/{key}", {})[record["step"]] = float(value)
    return expected


def assert_series(got: dict, expected: dict[str, dict[int, float]], tracker: str) -> None:
    for key, by_step in expected.items():
        assert key in got, f"{tracker} has no {key}"
        assert set(got[key]) == set(by_step), (tracker, key, got[key])
        for step, value in by_step.items():
            assert got[key][step] == pytest.approx(value, **CLOSE), (tracker, key, step)


def test_gem_train_reports_each_step_to_every_tracker_and_a_resume_continues_their_runs(tiny_model_dir, tmp_path):
    env = offline_env(tmp_path / "home")
    run = tmp_path / "run"
    common = ("--max-new-tokens", "4", "--episodes-per-step", "2", "--threads", "1", "--no-progress")
    first = gem(env, "train", "--model", str(tiny_model_dir), "--env", GTN, "--steps", "2", "--no-lora",
                "--output-dir", str(run), "--report-to", ALL, *common)
    for label in ("TensorBoard:", "W&B:", "trackio:", "MLflow:"):
        assert label in first.stdout  # each says where its values go
    assert "offline" in first.stdout
    state = json.loads((run / STATE_FILE).read_text())
    assert sorted(state) == sorted(TRACKERS)
    assert Path(state["trackio"]["dir"]) == run / "trackio"  # in the run folder, with no variable set
    assert state["mlflow"]["tracking_uri"] == f"sqlite:///{(run / 'mlflow' / 'mlflow.db').resolve()}"

    # resume to step 3: the same tracker runs go on
    gem(env, "train", "--resume", str(run), "--steps", "3", *common[-3:])
    assert json.loads((run / STATE_FILE).read_text()) == state
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2, 3]
    expected = train_values(records)
    for key in ("train/mean_return", "train/success_rate", "train/format_error_rate", "train/turns_per_episode",
                "train/advantage_mean", "train/advantage_std", "train/loss", "train/tokens_per_second",
                "train/step_seconds", "train/failed_rate", f"train/failed_rate/{GTN}"):
        assert key in expected
    checkpoint = str(run / "checkpoint" / "model")
    config = build_config({"model": str(tiny_model_dir)}).to_dict()  # every setting, as a run config

    scalars, tags = tensorboard_scalars(run / "tensorboard")
    assert_series(scalars, expected, "TensorBoard")
    assert tags["images"] == ["train/learning_curve"]
    assert tensorboard_text(run / "tensorboard", "train/checkpoint/text_summary")[-1] == (3, checkpoint)
    assert "| lora | False |" in tensorboard_text(run / "tensorboard", "config/text_summary")[0][1]

    logs = wandb_records(run)
    assert len(logs) == 2  # the first session and the resumed one, both under one run id
    runs = [next(r["run"] for r in log if r.get("type") == "run") for log in logs]
    assert runs[0]["run_id"] == runs[1]["run_id"] == state["wandb"]["id"]
    assert runs[0]["project"] == "gem" and runs[0]["job_type"] == "train"
    assert set(config) <= set(runs[0]["config"]["update"])
    history = wandb_history(logs[0] + logs[1])
    assert_series(history, expected, "W&B")
    assert set(history["train/learning_curve._type"].values()) == {"image-file"}

    logs, trackio_config = trackio_logs(run / "trackio", "gem", run.name)
    series = trackio_series(logs)
    assert_series(series, expected, "trackio")
    assert trackio_config["estimator"] == "rebn" and trackio_config["steps"] == 3
    assert {v["_type"] for v in series["train/learning_curve"].values()} == {"trackio.image"}
    assert series["train/checkpoint"][3] == {"_type": "trackio.markdown", "_value": checkpoint}

    client, mlflow = mlflow_run(state["mlflow"]["tracking_uri"], state["mlflow"]["run_id"])
    assert mlflow.info.status == "FINISHED" and mlflow.info.run_name == run.name
    assert_series({key: mlflow_series(client, mlflow.info.run_id, key) for key in expected}, expected, "MLflow")
    assert mlflow.data.params["estimator"] == "rebn" and mlflow.data.tags["train/checkpoint"] == checkpoint
    experiment = client.get_experiment(mlflow.info.experiment_id)
    assert experiment.name == "gem" and len(client.search_runs([experiment.experiment_id])) == 1
    assert Path(experiment.artifact_location.removeprefix("file://")).is_relative_to(run.resolve())


def test_gem_eval_reports_its_table_and_pass_at_k_to_every_tracker(tiny_model_dir, tmp_path):
    env = offline_env(tmp_path / "home")
    out = tmp_path / "eval"
    gem(env, "eval", "--model", str(tiny_model_dir), "--env", GTN, "--episodes", "2", "--samples", "3",
        "--max-new-tokens", "4", "--temperature", "1", "--device", "cpu", "--output-dir", str(out),
        "--report-to", ALL, "--no-progress")
    report = json.loads((out / "report.json").read_text())
    (scores,) = report["environments"]
    prefix = f"eval/{GTN}"
    expected = {f"{prefix}/{key}": {0: float(scores[key])} for key in
                ("success_rate", "mean_return", "return_stderr", "turns_per_episode", "format_error_rate",
                 "episodes", "best_of_k_return", "failed_rate")}
    expected[f"{prefix}/pass_at_k"] = {int(k): value for k, value in scores["pass_at_k"].items()}
    assert sorted(expected[f"{prefix}/pass_at_k"]) == [1, 2, 3]
    state = json.loads((out / STATE_FILE).read_text())

    scalars, tags = tensorboard_scalars(out / "tensorboard")
    assert_series(scalars, expected, "TensorBoard")
    assert tags["images"] == ["eval/report"]
    table = tensorboard_text(out / "tensorboard", "eval/scores/text_summary")[0][1]
    assert "pass@3" in table and GTN in table

    (log,) = wandb_records(out)
    history = wandb_history(log)
    assert_series(history, expected, "W&B")
    assert history["eval/report._type"] == {0: "image-file"} and history["eval/scores._type"] == {0: "table-file"}

    logs, _ = trackio_logs(out / "trackio", "gem", out.name)
    series = trackio_series(logs)
    assert_series(series, expected, "trackio")
    assert series["eval/report"][0]["_type"] == "trackio.image"
    table = series["eval/scores"][0]["_value"]
    assert table[0]["environment"] == GTN and table[0]["pass@3"] == pytest.approx(scores["pass_at_k"]["3"])

    client, mlflow = mlflow_run(state["mlflow"]["tracking_uri"], state["mlflow"]["run_id"])
    assert_series({key: mlflow_series(client, mlflow.info.run_id, key) for key in expected}, expected, "MLflow")
    assert mlflow.data.tags["gem.kind"] == "eval"
    artifacts = {a.path for a in client.list_artifacts(mlflow.info.run_id, "eval")}
    assert "eval/scores.json" in artifacts


# ---- bad input and failures -------------------------------------------------------------------------


def test_unknown_names_and_missing_packages_fail_before_anything_runs(tiny_model_dir, tmp_path, monkeypatch):
    assert parse_report_to("none") == parse_report_to(None) == parse_report_to("") == []
    assert parse_report_to(" WandB, tensorboard,wandb ") == ["wandb", "tensorboard"]
    with pytest.raises(UnknownNameError, match="Did you mean: tensorboard"):
        build_config({"report_to": "tensorbord"})
    with pytest.raises(GemError, match="cannot go with wandb"):
        build_config({"report_to": ["none", "wandb"]})

    real = __import__("importlib.util").util.find_spec
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None if name == "mlflow" else real(name, *a))
    with pytest.raises(MissingDependencyError, match=r"pip install 'gem-adapters\[mlflow\]'"):
        build_config({"report_to": "tensorboard,mlflow"})

    from gem_trainer.evaluation.evaluate import EvalSettings, run_evaluation

    with pytest.raises(MissingDependencyError, match=r"gem-adapters\[mlflow\]"):
        run_evaluation(EvalSettings(envs=[GTN], model=str(tiny_model_dir), report_to="mlflow",
                                    output_dir=str(tmp_path / "eval"), progress=False))
    assert not (tmp_path / "eval").exists()  # nothing was played


def test_an_unknown_tracker_on_the_command_line_is_a_clean_error(tmp_path):
    done = subprocess.run([sys.executable, "-m", "gem_core.cli", "train", "--report-to", "wandb,tensorbord",
                           "--output-dir", str(tmp_path / "run")], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "Unknown tracker (--report-to) 'tensorbord'" in done.stderr and "tensorboard" in done.stderr
    assert not (tmp_path / "run").exists()


def test_a_tracker_that_fails_mid_run_is_reported_once_and_the_run_goes_on(tiny_model_dir, tmp_path, monkeypatch):
    from rich.console import Console
    from torch.utils.tensorboard import SummaryWriter

    from gem_trainer.training.trainer import Trainer

    register_once()
    writes = []

    def add_scalar(self, tag, value, step=None, *args, **kwargs):
        if step is not None and step >= 2:
            raise OSError(28, "No space left on device")
        writes.append((tag, step))
        return real_add_scalar(self, tag, value, step, *args, **kwargs)

    real_add_scalar = SummaryWriter.add_scalar
    monkeypatch.setattr(SummaryWriter, "add_scalar", add_scalar)
    output = io.StringIO()
    config = build_config({"model": str(tiny_model_dir), "envs": [ENV_ID], "steps": 3, "episodes_per_step": 2,
                           "max_new_tokens": 4, "device": "cpu", "lora": False, "threads": 1,
                           "output_dir": str(tmp_path / "run"), "report_to": "tensorboard"})
    result = Trainer(config, progress=False, console=Console(file=output, width=300)).run()

    assert [r["step"] for r in result.records] == [1, 2, 3]  # the run went on
    said = output.getvalue()
    assert said.count("TensorBoard stopped recording") == 1, said
    assert "No space left on device" in said
    assert {step for _, step in writes} == {1}
    scalars, _ = tensorboard_scalars(tmp_path / "run" / "tensorboard")
    assert scalars["train/mean_return"] == {1: pytest.approx(result.records[0]["mean_return"], **CLOSE)}


def test_a_tracker_that_cannot_start_stops_the_run_before_its_first_episode(tiny_model_dir, tmp_path, monkeypatch):
    from gem_trainer.training.trainer import Trainer
    from tests.helpers import free_port

    register_once()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{free_port()}")  # a server that is gone
    config = build_config({"model": str(tiny_model_dir), "envs": [ENV_ID], "steps": 1, "episodes_per_step": 2,
                           "max_new_tokens": 4, "device": "cpu", "lora": False, "threads": 1,
                           "output_dir": str(tmp_path / "run"), "report_to": "mlflow"})
    with pytest.raises(GemError, match="MLflow could not start its run .*Connection refused.*leave mlflow out"):
        Trainer(config, progress=False).run()
    assert not list((tmp_path / "run" / "episodes").iterdir())  # no episode was played
    assert "MLFLOW_HTTP_REQUEST_MAX_RETRIES" not in os.environ  # set only while the run started


def test_wandb_goes_online_only_with_an_api_key(tmp_path, monkeypatch):
    for name in ("WANDB_API_KEY", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("NETRC", raising=False)
    assert not wandb_key_set()
    (tmp_path / ".netrc").write_text("machine api.wandb.ai\n  login user\n  password secret\n")
    (tmp_path / ".netrc").chmod(0o600)
    assert wandb_key_set()
    monkeypatch.setenv("WANDB_BASE_URL", "https://wandb.example.org")
    assert not wandb_key_set()  # a key for another host
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert wandb_key_set()


def test_tables_render_as_markdown():
    table = markdown_table(["env", "success"], [["a|b", 0.123456], ["c", 1]])
    assert table.splitlines() == ["| env | success |", "|---|---|", "| a\\|b | 0.1235 |", "| c | 1 |"]

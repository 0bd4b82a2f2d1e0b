"""`gem train` and `gem eval` play an environment served by `gem serve` through its `remote:` id,
unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import gem_command

pytest.importorskip("websockets", reason="the openenv extra is installed by scripts/install_test_deps.sh")

from tests.serve.servers import gem_serve  # noqa: E402

GTN = "game:GuessTheNumber-v0-easy"


def test_train_and_eval_on_a_remote_env(tiny_model_dir: Path, tmp_path: Path):
    with gem_serve(GTN) as (url, _):
        env_id = f"remote:{url}"
        trained = gem_command("train", "--model", str(tiny_model_dir), "--env", env_id, "--estimator", "reinforce",
                              "--no-lora", "--output-dir", str(tmp_path / "run"),
                              "--steps", "1", "--episodes-per-step", "2", "--max-new-tokens", "4", "--threads", "1",
                              "--no-progress")
        assert trained.returncode == 0, trained.stderr
        assert json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])["step"] == 1
        out = tmp_path / "eval"
        evaluated = gem_command("eval", "--model", str(tiny_model_dir), "--env", env_id, "--episodes", "3",
                                "--max-new-tokens", "4", "--output-dir", str(out), "--no-progress")
        assert evaluated.returncode == 0, evaluated.stderr
    report = json.loads((out / "report.json").read_text())
    assert [(e["env_id"], e["episodes"]) for e in report["environments"]] == [(env_id, 3)]

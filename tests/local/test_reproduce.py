"""The paper-claims script, run small with the tiny model."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from tests.helpers import REPO


def load_script():
    spec = importlib.util.spec_from_file_location("reproduce_paper", REPO / "scripts" / "reproduce_paper.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reproduce_script_runs_every_arm_and_writes_table_json_csv_and_plot(tiny_model_dir: Path, tmp_path: Path, capsys):
    script = load_script()
    code = script.main(["--model", str(tiny_model_dir), "--preset", "cpu", "--steps", "2", "--episodes-per-step", "2",
                        "--out", str(tmp_path)])
    assert code == 0
    results = json.loads((tmp_path / "claims.json").read_text())
    assert results["preset"] == "cpu" and results["settings"]["steps"] == 2
    runs = {name: sorted(e["runs"]) for name, e in results["experiments"].items()}
    assert runs == {"rebn_vs_reinforce": ["REINFORCE", "ReBN"], "gamma": ["gamma 0.9", "gamma 0.999"]}
    for experiment in results["experiments"].values():
        for records in experiment["runs"].values():
            assert [r["step"] for r in records] == [1, 2]
    saved = (tmp_path / "gamma" / "gamma_0.999-seed0" / "config.yaml").read_text()
    assert "gamma: 0.999" in saved and "game:GuessTheNumber-v0\n" in saved
    assert (tmp_path / "rebn_vs_reinforce" / "REINFORCE-seed0" / "config.yaml").read_text().count("estimator: reinforce") == 1
    assert len((tmp_path / "claims.csv").read_text().splitlines()) == 5
    assert (tmp_path / "claims.png").read_bytes()[:4] == b"\x89PNG"
    assert "paper claims" in capsys.readouterr().out

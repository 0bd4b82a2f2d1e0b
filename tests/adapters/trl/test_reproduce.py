"""The TRL arm of the paper-claims script's ``frameworks`` preset (gem train vs TRL), run small
with a tiny random model: it trains through GemGRPOTrainer with LoRA and returns one record per
step, named as `gem train` names its metrics (the `gem train` arm is tested in the core stage)."""

from __future__ import annotations

import importlib.util

from tests.adapters.trl.conftest import EASY
from tests.helpers import REPO


def load_script():
    spec = importlib.util.spec_from_file_location("reproduce_paper", REPO / "scripts" / "reproduce_paper.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_trl_arm_records_each_step_as_gem_train_does(tiny_model_dir, tmp_path):
    script = load_script()
    env_id, metric, better, arms = script.EXPERIMENTS["frameworks"]
    assert (env_id, metric, better) == (EASY, "success_rate", "same")
    settings = arms["TRL"]
    preset = {**script.PRESETS["frameworks"], "steps": 2, "episodes_per_step": 4, "max_new_tokens": 8}
    recipe = {"env": env_id, "settings": settings, "preset": preset, "seed": 0, "model": str(tiny_model_dir)}
    records = script.trl_run(recipe, tmp_path / "run")
    assert [r["step"] for r in records] == [1, 2]
    for record in records:
        assert 0.0 <= record["success_rate"] <= 1.0 and record["turns_per_episode"] >= 1
        assert record["mean_return"] <= 1.0
    assert (tmp_path / "run" / "metrics.json").exists()
    assert script.finished_trl_run(tmp_path / "run", recipe) == records  # read back, not played again
    assert script.finished_trl_run(tmp_path / "run", {**recipe, "seed": 1}) is None

"""The gpu_rollout benchmark workload's TRL part, run small on the CPU with SmolLM2: a step of the
adapter timed, its generation's tokens counted; continuous batching is left to GPUs."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import REPO


def test_gpu_rollout_times_the_trl_adapter(smollm2_dir, tmp_path):
    out = subprocess.run([sys.executable, str(REPO / "bench/workloads/gpu_rollout.py"), "--impl", "ours",
                          "--parts", "trl", "--episodes", "4", "--steps", "1", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=900, cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    metrics = json.loads(out.stdout.strip().splitlines()[-1])["metrics"]
    assert set(metrics) == {"trl_generate_4_tokens_per_s", "trl_generate_4_step_s"}
    assert all(m["value"] > 0 for m in metrics.values())
    (figure,) = json.loads((tmp_path / "results.json").read_text())["trl"]
    (step,) = figure["steps"]
    assert step["tokens"] >= 4 and step["sampling_s"] < step["seconds"]  # every episode sampled a turn
    assert "continuous batching" in " ".join(json.loads((tmp_path / "results.json").read_text())["skipped"])

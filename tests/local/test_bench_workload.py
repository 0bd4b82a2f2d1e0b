"""The gpu_rollout benchmark workload, run small on the CPU with the tiny model: every sampler
measured side by side, the protocol's metrics line, the JSON and the chart."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import REPO


def test_gpu_rollout_measures_every_sampler_and_writes_json_and_chart(tiny_model_dir, tmp_path):
    out = subprocess.run([sys.executable, str(REPO / "bench/workloads/gpu_rollout.py"), "--impl", "ours", "--quick",
                          "--model", str(tiny_model_dir), "--parts", "bare", "train", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=600, cwd=REPO)
    assert out.returncode == 0, out.stderr
    metrics = json.loads(out.stdout.strip().splitlines()[-1])["metrics"]
    samplers = ("generate", "dynamic_cache", "buffer")  # on a CPU: no CUDA graphs, no continuous batching
    assert set(metrics) == {f"bare_{s}_4_tokens_per_s" for s in samplers} | {"bare_buffer_vs_generate_4"} \
        | {f"train_{s}_4_{m}" for s in samplers for m in ("tokens_per_s", "step_s")}
    assert all(m["value"] > 0 for m in metrics.values())
    assert metrics["bare_buffer_vs_generate_4"]["value"] == round(
        metrics["bare_buffer_4_tokens_per_s"]["value"] / metrics["bare_generate_4_tokens_per_s"]["value"], 4)
    results = json.loads((tmp_path / "results.json").read_text())
    assert [f["sampler"] for f in results["train"]] == list(samplers)
    assert all([r["step"] for r in f["records"]] == [1, 2] for f in results["train"])
    assert all(len(f["seconds"]) == 3 and f["tokens_per_call"] == 4 * 16 for f in results["bare"])
    assert "generate_batch" in " ".join(results["skipped"])
    assert (tmp_path / "gpu_rollout.png").read_bytes()[:4] == b"\x89PNG"
    assert "bare   buffer" in out.stderr  # the table


def test_gpu_rollout_has_no_reference_counterpart():
    out = subprocess.run([sys.executable, str(REPO / "bench/workloads/gpu_rollout.py"), "--impl", "reference"],
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 3 and "no trainer" in out.stderr

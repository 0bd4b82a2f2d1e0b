"""The code benchmark workload follows the benchmark protocol."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import REPO


def test_workload_prints_its_metrics():
    out = subprocess.run([sys.executable, str(REPO / "bench/workloads/code.py"), "--impl", "ours", "--episodes", "4"],
                         capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr
    metrics = json.loads(out.stdout.strip().splitlines()[-1])["metrics"]
    assert set(metrics) == {"code_episodes_per_s", "code_episodes_per_s_8_threads"}
    assert all(m["value"] > 0 and m["better"] == "higher" for m in metrics.values())

"""The WebShop benchmark workload follows the benchmark protocol."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.helpers import REPO


def test_workload_prints_its_metrics(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}  # the generated catalogue goes there
    env.pop("GEM_CACHE_DIR", None)
    out = subprocess.run([sys.executable, str(REPO / "bench/workloads/webshop.py"), "--impl", "ours",
                          "--products", "300", "--episodes", "3"],
                         capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert out.returncode == 0, out.stderr
    metrics = json.loads(out.stdout.strip().splitlines()[-1])["metrics"]
    for label in ("sample", "300"):
        for name in ("reset_ms", "search_step_ms", "click_step_ms", "rss_mb", "open_s"):
            metric = metrics[f"webshop_{name}_{label}"]
            assert metric["value"] > 0 and metric["better"] == "lower"
    assert (tmp_path / "gem-adapters" / "bench" / "webshop-300" / "items_shuffle.json").is_file()
    reference = subprocess.run([sys.executable, str(REPO / "bench/workloads/webshop.py"), "--impl", "reference"],
                               capture_output=True, text=True, timeout=60, cwd=REPO)
    assert reference.returncode == 3 and "Java" in reference.stderr

"""`gem envs` lists the terminal tasks and `gem play` lets a person solve one by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import gem_command

ROOT = Path(__file__).resolve().parents[2]


def test_envs_lists_the_terminal_ids():
    rows = json.loads(gem_command("envs", "terminal:*", "--json").stdout)
    ids = {row["id"] for row in rows}
    assert {"terminal:All-v0", "terminal:Tasks-v0", "terminal:csv-column-sum-v0"} <= ids
    assert all(row["offline"] for row in rows)


def test_play_solves_a_task_by_hand(sandbox):
    actions = ("<bash>head -3 sales.csv</bash>\n"
               "<bash>awk -F, 'NR > 1 {s += $3} END {printf \"%.2f\\n\", s}' sales.csv > total.txt</bash>\n"
               "<finish>\n/quit\n")
    result = gem_command("play", "terminal:csv-column-sum-v0", "--seed", "0", input=actions)
    assert result.returncode == 0, result.stderr
    assert "date,region,amount" in result.stdout
    assert "Tests: 1 of 1 passed" in result.stdout and "reward +1.000" in result.stdout


def test_benchmark_workload_has_no_reference_counterpart():
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "workloads" / "terminal.py"), "--impl", "reference"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and "needs Docker" in done.stderr

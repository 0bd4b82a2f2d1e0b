"""Two processes (torchrun, gloo on CPU, a tiny random model): each process plays its own
episodes, of different lengths, generating as many turns as the busiest process, and ReBN's
advantages cover the turns of both, equal to gem_core's ReBN over the whole batch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gem_adapters.trl.config import RunSettings, write_run
from gem_core import get_estimator
from tests.adapters.trl.conftest import EASY
from tests.helpers import REPO


def test_rebn_covers_every_process_turns(tiny_model_dir, tmp_path):
    written = write_run(RunSettings(env_ids=(EASY,), model=str(tiny_model_dir), out_dir=tmp_path, train_size=2,
                                    val_size=1, batch_size=2, rollouts_per_start=2, cpu=True))
    rows = tmp_path / "turns.jsonl"  # seeds 1 and 5: episodes of 2 and 3 turns
    rows.write_text("".join(json.dumps({"prompt": [{"role": "user", "content": "Say anything."}],
                                        "env_id": "test:Turns-v0", "seed": seed}) + "\n" for seed in (1, 5)))
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
               str(REPO / "tests" / "adapters" / "trl" / "two_ranks.py"), "--config", str(written.file),
               "--train_file", str(rows), "--eval_file", str(rows), "--max_steps", "1",
               "--max_completion_length", "4", "--per_device_train_batch_size", "2", "--gem_max_turns", "5",
               "--output_dir", str(tmp_path / "out")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    reports = sorted(reported(result.stdout), key=lambda report: report["rank"])
    assert [report["rank"] for report in reports] == [0, 1]
    lengths = {len(episode) for report in reports for episode in report["rewards"]}
    assert lengths == {2, 3}  # the processes played episodes of different lengths
    rewards = [episode for report in reports for episode in report["rewards"]]
    expected = get_estimator("rebn")(rewards, gamma=0.9)
    actual = [episode for report in reports for episode in report["advantages"]]
    for want, got in zip(expected, actual):
        assert got == pytest.approx(want.tolist(), abs=1e-5)


def reported(stdout: str) -> list[dict]:
    """The GEM-RESULT reports, wherever the two processes' output put them."""
    marker, decoder, reports = "GEM-RESULT ", json.JSONDecoder(), []
    start = stdout.find(marker)
    while start >= 0:
        report, end = decoder.raw_decode(stdout, start + len(marker))
        reports.append(report)
        start = stdout.find(marker, end)
    return reports

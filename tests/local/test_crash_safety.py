"""A kill at any moment of `gem train` loses at most one step: SIGKILL during sampling, training,
the checkpoint write and the checkpoint swap, then a resume, gives the uninterrupted run's metrics,
with no duplicated or half-written line."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from gem_trainer.metrics import TIMINGS
from gem_trainer.training.checkpoint import load_trainer_state
from gem_trainer.training.trainer import EPISODES_DIR, Trainer
from tests.helpers import run_python
from tests.local.envs import register_once
from tests.local.test_trainer import config

STEPS, SAVE_EVERY, EPISODES = 4, 2, 4

#: Runs the trainer in a fresh process that kills itself with SIGKILL at ``moment`` of step ``step``.
KILLED_RUN = """
import os, signal, sys, json, pathlib, shutil
import torch
import gem_core
import gem_trainer.training.trainer as trainer
from gem_trainer.config import build_config
from tests.local.envs import register_once

register_once()
settings, moment, step = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
current = {"step": 0}
die = lambda: os.kill(os.getpid(), signal.SIGKILL)

train_step = trainer.Trainer.train_step
def tracked(self, number):
    current["step"] = number
    return train_step(self, number)
trainer.Trainer.train_step = tracked

if moment == "sampling":
    collect = gem_core.collect_episodes
    def collect_then_die(vec, policy, *args, **kwargs):
        if current["step"] == step:
            policy([vec.env_ids[0]])  # mid-sampling
            die()
        return collect(vec, policy, *args, **kwargs)
    gem_core.collect_episodes = collect_then_die
elif moment == "training":
    loss = trainer.reinforce_loss
    trainer.reinforce_loss = lambda *a, **k: die() if current["step"] == step else loss(*a, **k)
elif moment == "checkpoint":
    save = torch.save
    torch.save = lambda *a, **k: die() if current["step"] == step else save(*a, **k)
elif moment == "swap":
    rename = pathlib.Path.rename
    renames = {"n": 0}
    def rename_then_die(self, target):
        if current["step"] == step:
            renames["n"] += 1
            if renames["n"] == 2:  # the old checkpoint moved aside, the new one not yet in place
                die()
        return rename(self, target)
    pathlib.Path.rename = rename_then_die
trainer.Trainer(build_config(settings), progress=False).run()
"""


def settings(tiny_model_dir: Path, output_dir: Path) -> dict:
    return {"model": str(tiny_model_dir), "envs": ["testlocal:LetterShare-v0"], "steps": STEPS,
            "episodes_per_step": EPISODES, "max_new_tokens": 6, "learning_rate": 1e-3, "device": "cpu",
            "output_dir": str(output_dir), "micro_batch_tokens": 256, "lora": False, "threads": 1,
            "save_every": SAVE_EVERY}


def comparable(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMINGS} for r in records]


@pytest.fixture(scope="module")
def straight(tiny_model_dir, tmp_path_factory):
    register_once()
    out = tmp_path_factory.mktemp("straight")
    return Trainer(config(tiny_model_dir, out, steps=STEPS, save_every=SAVE_EVERY), progress=False).run()


@pytest.mark.parametrize("moment, step, resumes_from", [
    ("sampling", 3, 2), ("training", 3, 2), ("checkpoint", 4, 2), ("swap", 4, 4),
])
def test_a_kill_loses_at_most_one_step(tiny_model_dir, tmp_path, straight, moment, step, resumes_from):
    out = tmp_path / "run"
    killed = run_python(KILLED_RUN, timeout=300, argv=[json.dumps(settings(tiny_model_dir, out)), moment, str(step)])
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert load_trainer_state(out).step == resumes_from
    if resumes_from < STEPS:
        resumed = Trainer(config(tiny_model_dir, out, steps=STEPS, save_every=SAVE_EVERY), resume=out,
                          progress=False).run()
        assert [r["step"] for r in resumed.records] == list(range(1, STEPS + 1))
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == list(range(1, STEPS + 1))  # no duplicate, no torn line
    assert comparable([json.loads(line) for line in lines]) == comparable(straight.records)
    assert load_trainer_state(out).step == STEPS
    files = sorted((out / EPISODES_DIR).glob("step-*.jsonl"))
    assert [f.name for f in files] == [f"step-{s:05d}.jsonl" for s in range(1, STEPS + 1)]
    assert all(len(f.read_text().splitlines()) == EPISODES for f in files)
    assert not list(out.glob(".checkpoint-*")) and not list((out / EPISODES_DIR).glob(".*"))


def test_a_metrics_line_cut_short_by_a_kill_is_dropped(tmp_path):
    from gem_trainer.metrics import MetricsLog

    log = MetricsLog(tmp_path / "metrics.jsonl")
    log.append({"step": 1, "loss": 0.5})
    log.append({"step": 2, "loss": 0.25})
    with open(log.path, "a") as f:
        f.write('{"step": 3, "lo')  # the kill struck mid-line
    assert [r["step"] for r in log.read()] == [1, 2]
    log.truncate_after(1)
    assert log.path.read_text() == '{"step": 1, "loss": 0.5}\n'

"""`gem train` and `gem eval` with their environments on a Ray cluster (--ray-address,
--env-hosts), on the session's simulated cluster: the same episodes as in-process."""

from __future__ import annotations

from pathlib import Path

import pytest

import gem_core
from gem_core.episodes import load_episodes
from gem_trainer.cli import train_config
from gem_trainer.config import ConfigError, vector_mode
from gem_trainer.evaluation.evaluate import EvalSettings, run_evaluation
from gem_trainer.training.trainer import EPISODES_DIR, Trainer

GTN = "game:GuessTheNumber-v0-easy"
#: The test environment of tests/local registered by "module:Class", which hosts can import.
RAY_ENV_ID = "testlocal:LetterShareOnHosts-v0"


def test_the_flags_choose_where_environments_run():
    assert vector_mode(None, None) == {"mode": "async"}
    assert vector_mode("auto", None) == {"mode": "ray", "pool": {"address": "auto", "hosts": 2}}
    assert vector_mode("local", 3) == {"mode": "ray", "pool": {"address": None, "hosts": 3}}
    config = train_config(None, None, {"ray_address": "auto", "env_hosts": 4, "env": ()})
    assert (config.ray_address, config.env_hosts) == ("auto", 4)
    with pytest.raises(ConfigError, match="env_hosts must be at least 1"):
        train_config(None, None, {"env_hosts": 0, "env": ()})


def test_eval_on_the_cluster_scores_the_same_episodes(ray_cluster, tiny_model_dir: Path, tmp_path: Path):
    common = dict(envs=[GTN], model=str(tiny_model_dir), episodes=4, concurrency=4, max_new_tokens=6, device="cpu",
                  progress=False)
    here = run_evaluation(EvalSettings(**common, output_dir=str(tmp_path / "here")))
    there = run_evaluation(EvalSettings(**common, output_dir=str(tmp_path / "there"), ray_address=ray_cluster.address,
                                        env_hosts=2))
    assert here["environments"][0]["episodes"] == there["environments"][0]["episodes"] == 4
    assert load_episodes(tmp_path / "here" / "episodes.jsonl") == load_episodes(tmp_path / "there" / "episodes.jsonl")


def test_train_on_the_cluster_plays_the_same_episodes(ray_cluster, tiny_model_dir: Path, tmp_path: Path):
    from gem_trainer.config import build_config

    if not gem_core.list_envs(RAY_ENV_ID):
        gem_core.register(RAY_ENV_ID, "tests.local.envs:LetterShareEnv")

    def run(folder: str, **ray: object):
        return Trainer(build_config({
            "model": str(tiny_model_dir), "envs": [RAY_ENV_ID], "steps": 1, "episodes_per_step": 4, "max_new_tokens": 6,
            "learning_rate": 1e-3, "device": "cpu", "output_dir": str(tmp_path / folder), "micro_batch_tokens": 256,
            "lora": False, "threads": 1, **ray}), progress=False).run()

    here, there = run("here"), run("there", ray_address=ray_cluster.address, env_hosts=2)
    assert there.records[0]["episodes"] == 4
    step = Path(EPISODES_DIR) / "step-00001.jsonl"
    assert load_episodes(here.output_dir / step) == load_episodes(there.output_dir / step)

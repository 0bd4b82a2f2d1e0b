"""``gem verl config``: the files it writes, Hydra composing them on verl's packaged defaults,
verl's own config checks and dataset loader accepting them, and clear errors for bad input."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest

import gem_core
from gem_core.wrappers.observation import as_seen  # observations as adapters show them
from tests.adapters.config_command import EASY, HARD, config_run
from tests.adapters.verl.conftest import compose_config


def gem(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gem_core.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    return config_run(tmp_path_factory, "verl", "--batch-size", "5")


def read_rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_writes_config_and_datasets(cli_run):
    out, result = cli_run
    assert sorted(p.name for p in out.iterdir()) == ["gem_verl.yaml", "train.jsonl", "val.jsonl"]
    command = result.stdout.strip().splitlines()[-1]
    assert shlex.split(command)[1:] == ["-m", "verl.trainer.main_ppo", "--config-path", str(out.resolve()),
                                        "--config-name", "gem_verl"]
    train, val = read_rows(out / "train.jsonl"), read_rows(out / "val.jsonl")
    assert len(train) == 10 and len(val) == 4
    assert [r["extra_info"]["env_id"] for r in train[:4]] == [EASY, HARD, EASY, HARD]
    assert [r["extra_info"]["seed"] for r in train] == list(range(100, 110))
    assert [r["extra_info"]["seed"] for r in val] == list(range(110, 114))  # disjoint from training
    assert [r["extra_info"]["index"] for r in val] == [0, 1, 2, 3]
    for r in train[:2] + val[:2]:
        env = gem_core.make(r["extra_info"]["env_id"])
        first = as_seen(*env.reset(seed=r["extra_info"]["seed"]))
        assert r["prompt"] == [{"role": "user", "content": first}]
        assert r["agent_name"] == "gem" and r["data_source"] == r["extra_info"]["env_id"]


def test_hydra_composes_the_written_config(cli_run):
    out, result = cli_run
    command = shlex.split(result.stdout.strip().splitlines()[-1])
    job = subprocess.run([sys.executable, *command[1:], "--cfg", "job"], capture_output=True, text=True,
                         timeout=300)
    assert job.returncode == 0, job.stderr[-3000:]
    composed = job.stdout
    for line in ("adv_estimator: rebn", "gamma: 0.8", "default_agent_loop: gem", "path: Qwen/Qwen3-0.6B",
                 f"train_files: {out.resolve() / 'train.jsonl'}", "max_turns: 6", "use_v1: true",
                 "num_data_storage_units: 1"):
        assert line in composed, line
    assert "ppo_micro_batch_size_per_gpu: 4" in composed  # verl's defaults are there too


def test_verl_accepts_the_config_and_the_dataset(cli_run, chat_tokenizer):
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.dataset.rl_dataset import RLHFDataset

    out, _ = cli_run
    config = compose_config(out / "gem_verl.yaml")
    assert config.actor_rollout_ref.rollout.n == 2
    assert not need_critic(config) and not need_reference_policy(config)
    validate_config(config, use_reference_policy=False, use_critic=False)  # what main_ppo checks first
    dataset = RLHFDataset(data_files=[str(out / "val.jsonl")], tokenizer=chat_tokenizer, config=config.data)
    assert len(dataset) == 4  # none filtered as too long
    item = dataset[1]
    assert item["extra_info"]["env_id"] == HARD and item["agent_name"] == "gem"


@pytest.mark.parametrize("gpus, nodes", [(1, 1), (2, 3)])
def test_transfer_queue_is_sized_for_the_cluster_the_config_targets(tmp_path, gem_estimators, gpus, nodes):
    """One storage unit per GPU (verl's default of 8, one CPU each, hangs a launch on a one-GPU
    workstation with fewer than 9 CPUs); the config's header and the command say what the Ray
    cluster needs."""
    from gem_adapters.verl.config import RunSettings, cluster_cpus, write_run

    settings = RunSettings(env_ids=(EASY,), model="m", out_dir=tmp_path, train_size=12, val_size=2, batch_size=6,
                           gpus=gpus, nodes=nodes)
    written = write_run(settings)
    config = compose_config(written.config)
    assert config.transfer_queue.backend.SimpleStorage.num_data_storage_units == gpus * nodes
    assert config.transfer_queue.backend.storage_backend == "SimpleStorage"  # verl's default, kept
    cpus = 1 + gpus * nodes + 3 * gpus * nodes  # the controller, the storage units, verl's worker bundles
    assert cluster_cpus(settings) == cpus
    assert f"# Ray cluster: {cpus} CPUs and {gpus * nodes} GPU" in written.config.read_text()


def test_the_command_says_what_the_ray_cluster_needs(cli_run):
    _, result = cli_run
    assert "Ray cluster: 5 CPUs and 1 GPU at least" in result.stderr


def test_other_estimators_get_their_verl_names(tmp_path):
    result = gem("verl", "config", "--env", EASY, "--model", "m", "--out", str(tmp_path), "--estimator", "grpo",
                 "--n", "4", "--train-size", "8", "--val-size", "2", "--batch-size", "4")
    assert result.returncode == 0, result.stderr
    assert "adv_estimator: gem_grpo" in (tmp_path / "gem_verl.yaml").read_text()


@pytest.mark.parametrize("args, message", [
    (["--env", "game:GuessTheNumbr-v0-easy"], "Did you mean: .*game:GuessTheNumber-v0-easy"),
    (["--env", EASY, "--estimator", "rebm"], "Unknown estimator 'rebm'. Did you mean: rebn"),
    (["--env", EASY, "--batch-size", "64", "--train-size", "8"], "lower --batch-size or raise --train-size"),
    (["--env", EASY, "--wrappers", "concat_chat"], "already keeps the whole conversation"),
    (["--env", EASY, "--wrappers", "no_such_wrapper"], "Unknown wrapper 'no_such_wrapper'"),
    (["--env", EASY, "--max-turns", "0"], "gem.max_turns must be a positive integer"),
    (["--env", EASY, "--gamma", "1.5"], r"gamma must be within \[0, 1\]"),
])
def test_bad_input_gets_a_clear_error(tmp_path, args, message):
    import re

    result = gem("verl", "config", "--model", "m", "--out", str(tmp_path / "out"), *args)
    assert result.returncode != 0
    assert re.search(message, result.stderr), result.stderr
    assert "Traceback" not in result.stderr


def test_gem_lists_the_verl_command():
    listing = gem("--help")
    assert listing.returncode == 0
    assert "verl" in listing.stdout
    help_text = gem("verl", "config", "--help")
    assert help_text.returncode == 0 and "--response-length" in help_text.stdout

"""Writes what verl's own launcher needs to train on GEM environments: a Hydra config built on
verl's packaged defaults, and the (environment id, seed) datasets its dataloader reads.

Each dataset row is one episode start: ``extra_info`` names the environment and the seed, and
``prompt`` holds the environment's first observation (with the configured wrappers), so verl can
filter prompts that are too long and log readable inputs. The ``gem`` agent loop makes and resets
the environment itself; the same seed gives the same first observation.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gem_adapters.verl import AGENT_LOOP_NAME
from gem_adapters.verl.estimators import verl_name
from gem_adapters.verl.options import AgentLoopOptions
from gem_core.errors import GemError, MissingDependencyError

CONFIG_NAME = "gem_verl"
TRAIN_FILE, VAL_FILE = "train.jsonl", "val.jsonl"
ROLLOUT_ENGINES = ("vllm", "sglang")
MICRO_BATCH_PER_GPU = 4


@dataclass(frozen=True)
class RunSettings:
    """What ``gem verl config`` asks for; every field has a command-line option."""

    env_ids: tuple[str, ...]
    model: str
    out_dir: Path
    estimator: str = "rebn"
    gamma: float = 0.9
    train_size: int = 8192
    val_size: int = 256
    seed: int = 0
    batch_size: int = 64
    rollouts_per_start: int = 1
    prompt_length: int = 1024
    response_length: int = 2048
    learning_rate: float = 1e-6
    epochs: int = 1
    gpus: int = 1
    nodes: int = 1
    rollout_engine: str = "vllm"
    options: AgentLoopOptions = field(default_factory=AgentLoopOptions)

    def check(self) -> None:
        """Raise a :class:`GemError` for settings verl would reject or GEM cannot serve."""
        from gem_core.components import ESTIMATORS

        if not self.env_ids:
            raise GemError("Name at least one environment (--env ENV_ID); `gem envs` lists them.")
        ESTIMATORS.component(self.estimator)  # unknown names raise, naming the closest ones
        if not 0.0 <= self.gamma <= 1.0:
            raise GemError(f"gamma must be within [0, 1], not {self.gamma}.")
        if self.rollout_engine not in ROLLOUT_ENGINES:
            raise GemError(f"The rollout engine must be one of {', '.join(ROLLOUT_ENGINES)}, "
                           f"not {self.rollout_engine!r}.")
        for name in ("train_size", "val_size", "batch_size", "rollouts_per_start", "prompt_length",
                     "response_length", "epochs", "gpus", "nodes"):
            if getattr(self, name) < 1:
                raise GemError(f"--{name.replace('_', '-')} must be at least 1.")
        if self.batch_size > self.train_size:
            raise GemError(f"The batch size ({self.batch_size}) exceeds the training set "
                           f"({self.train_size} rows); lower --batch-size or raise --train-size.")
        if (self.batch_size * self.rollouts_per_start) % (self.gpus * self.nodes):
            raise GemError("batch size x rollouts per start must be divisible by the number of GPUs "
                           f"({self.gpus * self.nodes}), as verl requires.")


@dataclass(frozen=True)
class WrittenRun:
    config: Path
    train: Path
    val: Path
    longest_prompt: int  # characters of the longest first observation

    @property
    def command(self) -> str:
        """The native launch command for this config."""
        return shlex.join([Path(sys.executable).name, "-m", "verl.trainer.main_ppo",
                           "--config-path", str(self.config.parent),
                           "--config-name", self.config.stem])


def write_run(settings: RunSettings, *, progress: Any = None) -> WrittenRun:
    """Write the datasets and the config into ``settings.out_dir``.

    ``progress``, when given, is called with the number of rows written so far.
    """
    settings.check()
    yaml = yaml_writer()  # fail before writing anything
    out = settings.out_dir.expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    train, val = out / TRAIN_FILE, out / VAL_FILE
    seeds = range(settings.seed, settings.seed + settings.train_size + settings.val_size)
    starts = [(settings.env_ids[i % len(settings.env_ids)], s) for i, s in enumerate(seeds)]
    longest = write_dataset(train, starts[:settings.train_size], settings.options, "train", progress)
    done = settings.train_size

    def val_progress(count: int) -> None:
        if progress is not None:
            progress(done + count)

    longest = max(longest, write_dataset(val, starts[settings.train_size:], settings.options, "val",
                                         val_progress))
    config = out / f"{CONFIG_NAME}.yaml"
    config.write_text(config_text(settings, train, val, yaml))
    return WrittenRun(config, train, val, longest)


def write_dataset(path: Path, starts: Sequence[tuple[str, int]], options: AgentLoopOptions,
                  split: str, progress: Any = None) -> int:
    """Write one JSON line per (environment id, seed); returns the longest first observation."""
    from gem_core import make
    from gem_core.components import apply_wrappers

    longest = 0
    with open(path, "w", encoding="utf-8") as f:
        for index, (env_id, seed) in enumerate(starts):
            env = apply_wrappers(make(env_id), options.wrappers)
            try:
                observation, _ = env.reset(seed=seed)
            finally:
                env.close()
            longest = max(longest, len(observation))
            f.write(json.dumps(dataset_row(env_id, seed, index, split, observation), ensure_ascii=False))
            f.write("\n")
            if progress is not None:
                progress(index + 1)
    return longest


def dataset_row(env_id: str, seed: int, index: int, split: str, observation: str) -> dict[str, Any]:
    """One row in the layout verl's RLHFDataset reads."""
    return {
        "data_source": env_id,
        "agent_name": AGENT_LOOP_NAME,
        "prompt": [{"role": "user", "content": observation}],
        "reward_model": {"style": "gem", "ground_truth": ""},
        "extra_info": {"env_id": env_id, "seed": seed, "index": index, "split": split},
    }


def verl_config(settings: RunSettings, train: Path, val: Path) -> dict[str, Any]:
    """The config as a plain dict, on top of verl's ``ppo_trainer`` defaults."""
    return {
        "hydra": {"searchpath": ["pkg://verl.trainer.config"]},
        "defaults": ["ppo_trainer", "_self_"],
        "gem": settings.options.to_config(),
        "data": {
            "train_files": str(train),
            "val_files": str(val),
            "prompt_key": "prompt",
            "train_batch_size": settings.batch_size,
            "max_prompt_length": settings.prompt_length,
            "max_response_length": settings.response_length,
            "filter_overlong_prompts": True,
            "return_raw_chat": True,
            "seed": settings.seed,
        },
        "algorithm": {
            "adv_estimator": verl_name(settings.estimator),
            "gamma": settings.gamma,
            "use_kl_in_reward": False,
        },
        "critic": {"enable": False},
        "actor_rollout_ref": {
            "model": {"path": settings.model},
            "actor": {
                "ppo_mini_batch_size": settings.batch_size,
                "ppo_micro_batch_size_per_gpu": MICRO_BATCH_PER_GPU,
                "use_kl_loss": False,
                "optim": {"lr": settings.learning_rate},
            },
            "rollout": {
                "name": settings.rollout_engine,
                "mode": "async",
                "n": settings.rollouts_per_start,
                "tensor_model_parallel_size": 1,
                "gpu_memory_utilization": 0.5,
                "log_prob_micro_batch_size_per_gpu": MICRO_BATCH_PER_GPU,
                "agent": {"default_agent_loop": AGENT_LOOP_NAME},
            },
        },
        "trainer": {
            "use_v1": True,
            "logger": ["console"],
            "project_name": "gem",
            "experiment_name": experiment_name(settings),
            "n_gpus_per_node": settings.gpus,
            "nnodes": settings.nodes,
            "total_epochs": settings.epochs,
            "val_before_train": True,
            "test_freq": 10,
            "save_freq": -1,
        },
    }


def experiment_name(settings: RunSettings) -> str:
    first = settings.env_ids[0].replace(":", "-")
    more = f"-and-{len(settings.env_ids) - 1}-more" if len(settings.env_ids) > 1 else ""
    return f"{first}{more}-{settings.estimator}"


def yaml_writer() -> Any:
    """OmegaConf's YAML writer (the YAML dialect Hydra reads)."""
    try:
        from omegaconf import OmegaConf
    except ImportError:
        raise MissingDependencyError("`gem verl config`", "omegaconf", "verl") from None
    return lambda data: OmegaConf.to_yaml(OmegaConf.create(data))


def config_text(settings: RunSettings, train: Path, val: Path, yaml: Any) -> str:
    """The config file: a header saying how to launch it, then the YAML."""
    body = yaml(verl_config(settings, train, val))
    command = WrittenRun(train.parent / f"{CONFIG_NAME}.yaml", train, val, 0).command
    return (
        "# verl config for GEM environments, written by `gem verl config`.\n"
        f"# Launch: {command} [key=value ...]\n"
        "# The `gem` section configures the gem agent loop (see gem_adapters.verl.options).\n"
        f"{body}"
    )

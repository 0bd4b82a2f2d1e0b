"""Writes what ROLL's own launcher needs to train on GEM adapters' environments: one ROLL config
(the keys ROLL's GEM examples set), whose ``custom_envs`` name GEM adapters' ids through the bridge
(see :mod:`gem_adapters.roll.rollout`). ROLL plays episodes itself, seeded per group, so no dataset
is written.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gem_adapters.common.estimators import library_name
from gem_adapters.common.launch import command_line, python_command
from gem_adapters.common.settings import RunSettings as CommonSettings
from gem_adapters.common.written import yaml_writer
from gem_adapters.roll.rollout import roll_env_id
from gem_core.errors import GemError

CONFIG_NAME = "gem_roll"
ENV_MANAGERS = ("step_concat", "step")  # ROLL's step_reinforce needs one sample per turn
ENV_MANAGER_CLASSES = {"step_concat": "StepConcatEnvManager", "step": "StepEnvManager"}
DEFAULT_MAX_TURNS = 20  # ROLL's max_steps per episode when --max-turns is not given
DEFAULT_TOKENS_PER_TURN = 512
MAX_ENV_GROUPS = 128  # validation environments, at most
AGENT_TEMPLATES = {
    "step_concat": "Observation:\n{history}\n{current_observation}\n",
    "step": "{env_instruction}\n{history}\nTurn {current_step}. Observation:\n{current_observation}\n",
}


@dataclass(frozen=True)
class RunSettings(CommonSettings):
    """What ``gem roll config`` asks for: the shared settings plus ROLL's own."""

    env_manager: str = "step_concat"
    roll_dir: Path = Path(".")  # the ROLL checkout the launch command runs in
    native_normalisation: bool = False  # ROLL's own step_reinforce normalisation instead of GEM's

    def check(self) -> None:
        """Raise a :class:`GemError` for settings ROLL would reject or GEM cannot serve."""
        super().check()
        if self.env_manager not in ENV_MANAGERS:
            raise GemError(f"--env-manager must be one of {', '.join(ENV_MANAGERS)}, not {self.env_manager!r}: "
                           "ROLL's step_reinforce needs one sample per turn.")
        if self.native_normalisation and self.estimator != "rebn":
            raise GemError("--roll-normalisation replaces GEM's ReBN with ROLL's own; it does not go "
                           f"with --estimator {self.estimator}.")
        if self.options.max_tokens_per_turn is not None and self.options.max_tokens_per_turn > self.response_length:
            raise GemError("--max-tokens-per-turn exceeds --response-length.")

    @property
    def max_turns(self) -> int:
        return self.options.max_turns or DEFAULT_MAX_TURNS

    @property
    def tokens_per_turn(self) -> int:
        return self.options.max_tokens_per_turn or min(DEFAULT_TOKENS_PER_TURN, self.response_length)


@dataclass(frozen=True)
class WrittenRun:
    config: Path
    roll_dir: Path

    @property
    def command(self) -> str:
        """ROLL's launch command, run in the ROLL checkout (Hydra reads the config path relative
        to ROLL's ``examples`` folder)."""
        examples = self.roll_dir.expanduser().resolve() / "examples"
        config_path = os.path.relpath(self.config.parent, examples)
        return command_line(python_command("examples/start_agentic_pipeline.py", "--config_path",
                                           config_path, "--config_name", self.config.stem))


def write_run(settings: RunSettings) -> WrittenRun:
    """Write the config into ``settings.out_dir``."""
    settings.check()
    yaml = yaml_writer("roll", hydra=True)  # fail before writing anything
    out = settings.out_dir.expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    written = WrittenRun(out / f"{CONFIG_NAME}.yaml", settings.roll_dir)
    body = yaml(roll_config(settings))
    written.config.write_text(
        "# ROLL config for GEM adapters' environments, written by `gem roll config`.\n"
        f"# Launch from the ROLL checkout: {written.command}\n"
        f"{body}")
    return written


def env_tag(env_id: str) -> str:
    """ROLL's tag of an environment: its id with every non-alphanumeric run as one underscore."""
    return re.sub(r"[^0-9A-Za-z]+", "_", env_id).strip("_")


def split_evenly(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def env_manager(settings: RunSettings, groups: int, group_size: int) -> dict[str, Any]:
    """One of ROLL's ``train_env_manager``/``val_env_manager`` sections."""
    tags = [env_tag(env_id) for env_id in settings.env_ids]
    return {
        "max_env_num_per_worker": 16,
        "num_env_groups": groups,
        "group_size": group_size,
        "tags": tags,
        "num_groups_partition": split_evenly(groups, len(tags)),
    }


def roll_config(settings: RunSettings) -> dict[str, Any]:
    """The config as a plain dict, with the keys ROLL's GEM examples set."""
    devices = f"list(range(0,{settings.total_gpus}))"
    groups = settings.batch_size
    val_groups = max(d for d in range(1, min(settings.val_size, MAX_ENV_GROUPS) + 1) if settings.val_size % d == 0)
    if len(settings.env_ids) > min(groups, val_groups):
        raise GemError(f"{len(settings.env_ids)} environments need at least as many episode starts per "
                       "batch and validation groups; raise --batch-size or choose a --val-size with "
                       "a larger divisor.")
    manager = f"gem_adapters.roll.env_managers.{ENV_MANAGER_CLASSES[settings.env_manager]}"
    estimator = library_name(settings.estimator)
    config: dict[str, Any] = {
        "hydra": {"run": {"dir": "."}, "output_subdir": None},
        "exp_name": f"gem_{env_tag(settings.env_ids[0])}_{estimator}",
        "seed": settings.seed,
        "logging_dir": str(settings.out_dir.expanduser().resolve() / "logs"),
        "output_dir": str(settings.out_dir.expanduser().resolve() / "output"),
        "track_with": "tensorboard",
        "tracker_kwargs": {"log_dir": str(settings.out_dir.expanduser().resolve() / "tensorboard")},
        "checkpoint_config": {"type": "file_system",
                              "output_dir": str(settings.out_dir.expanduser().resolve() / "checkpoints")},
        "num_gpus_per_node": settings.gpus,
        "max_steps": math.ceil(settings.train_size * settings.epochs / settings.batch_size),
        "save_steps": 10000,
        "logging_steps": 1,
        "eval_steps": 10,
        "resume_from_checkpoint": False,
        "rollout_batch_size": settings.batch_size * settings.rollouts_per_start,
        "val_batch_size": settings.val_size,
        "sequence_length": settings.prompt_length + settings.response_length,
        "ppo_epochs": 1,
        "adv_estimator": "step_reinforce",
        "batch_adjust_mode": "copy",
        "step_reward_gamma": settings.gamma,
        "gamma": 1.0,
        "init_kl_coef": 0.0,
        "whiten_advantages": False,
        "entropy_loss_coef": 0,
        "max_grad_norm": 1.0,
        "loss_agg_mode": "token-mean",
        "pretrain": settings.model,
        "reward_pretrain": settings.model,
        "actor_train": {
            "model_args": {"attn_implementation": "fa2", "disable_gradient_checkpointing": False,
                           "dtype": "bf16", "model_type": None},
            "training_args": {"learning_rate": settings.learning_rate, "weight_decay": 0,
                              "per_device_train_batch_size": 2, "gradient_accumulation_steps": 8,
                              "lr_scheduler_type": "constant"},
            "strategy_args": {"strategy_name": "megatron_train", "strategy_config": {
                "tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 1,
                "expert_model_parallel_size": 1, "use_distributed_optimizer": True,
                "recompute_granularity": "full"}},
            "device_mapping": devices,
            "infer_batch_size": 2,
        },
        "actor_infer": {
            "model_args": {"disable_gradient_checkpointing": True, "dtype": "bf16"},
            "generating_args": {"max_new_tokens": settings.tokens_per_turn, "top_p": 1.0, "top_k": -1,
                                "num_beams": 1, "temperature": 1.0, "num_return_sequences": 1},
            "strategy_args": {"strategy_name": "vllm", "strategy_config": {
                "gpu_memory_utilization": 0.8, "block_size": 16, "load_format": "auto"}},
            "device_mapping": devices,
        },
        "reference": {
            "model_args": {"attn_implementation": "fa2", "disable_gradient_checkpointing": True,
                           "dtype": "bf16", "model_type": None},
            "strategy_args": {"strategy_name": "hf_infer", "strategy_config": None},
            "device_mapping": devices,
            "infer_batch_size": 2,
        },
        "reward_normalization": {"grouping": "batch", "norm_mean_type": "batch", "norm_std_type": "batch"},
        "train_env_manager": env_manager(settings, groups, settings.rollouts_per_start),
        "val_env_manager": env_manager(settings, val_groups, 1),
        "custom_envs": {
            env_tag(env_id): {
                "env_type": roll_env_id(env_id),
                "max_steps": settings.max_turns,
                "max_tokens_per_step": settings.tokens_per_turn,
                "env_manager_cls": manager,
                "use_thread_lock": True,
                "history_length": settings.max_turns,
                "agent_system_template": None,
                "agent_template": AGENT_TEMPLATES[settings.env_manager],
                "env_config": {"gem": {"wrappers": list(settings.options.wrappers),
                                       "max_turns": settings.options.max_turns,
                                       **({"env_pool": dict(settings.options.env_pool)}
                                          if settings.options.env_pool else {}),
                                       **({"episode_deadline": settings.options.episode_deadline}
                                          if settings.options.episode_deadline else {})}},
            }
            for env_id in settings.env_ids
        },
    }
    if not settings.native_normalisation:
        config["pipeline_cls"] = f"gem_adapters.roll.pipeline.{estimator}"
    return config

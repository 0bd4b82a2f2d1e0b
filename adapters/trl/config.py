"""Writes what TRL needs to train on GEM environments: the datasets (one row per environment id
and seed, see :mod:`gem_adapters.common.dataset`) and a config file for
``python -m gem_adapters.trl.train --config FILE`` (TRL's own ``TrlParser`` format: the keys of
``GRPOConfig`` and of :class:`gem_adapters.trl.train.GemArguments`, all at the top level).

``mode`` picks the path (:mod:`gem_adapters.trl.train`): ``rollout`` (GEM's rollout and per-turn
advantages, the default) or ``factory`` (TRL's stock GRPOTrainer with ``environment_factory``).
A row is ``{"prompt": [first observation as a user message], "env_id": ..., "seed": ...}``: TRL
logs the prompt, and the rollout makes and resets the row's environment itself. In factory mode
the user message is empty (the environment's ``reset`` appends the first observation to it), and
with several environment ids the row's ``environment`` column names its environment, as TRL's
dict of factories reads it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gem_adapters.common import written
from gem_adapters.common.launch import command_line, python_command
from gem_adapters.common.settings import RunSettings as CommonSettings
from gem_adapters.common.written import WrittenRun, yaml_writer
from gem_adapters.trl import TRL_ESTIMATOR
from gem_adapters.trl.train import FACTORY, MODES, ROLLOUT
from gem_core.errors import GemError

CONFIG_FILE = "gem_trl.yaml"
TRAIN_MODULE = "gem_adapters.trl.train"
#: Stands in for TRL's own estimator in the shared checks: it is a group estimator too.
TRL_LIKE = "grpo"


@dataclass(frozen=True)
class RunSettings(CommonSettings):
    """What ``gem trl config`` asks for: the shared settings plus ``cpu`` (train on the CPU)."""

    rollouts_per_start: int = 4
    cpu: bool = False
    mode: str = ROLLOUT

    def check(self) -> None:
        """Raise a :class:`GemError` for settings TRL would reject or GEM cannot serve."""
        if self.mode not in MODES:
            raise GemError(f"--mode must be {' or '.join(MODES)}, not {self.mode!r}.")
        if self.mode == FACTORY:
            if self.estimator != TRL_ESTIMATOR:
                raise GemError("--mode factory trains with TRL's own group advantage: leave --estimator out "
                               "(or give `trl`), or use --mode rollout for GEM's estimators.")
            if self.options.max_tokens_per_turn is not None:
                raise GemError("--max-tokens-per-turn applies to --mode rollout; in factory mode TRL's "
                               "max_completion_length (--response-length) bounds the whole episode.")
        if self.estimator == TRL_ESTIMATOR:
            dataclasses.replace(self, estimator=TRL_LIKE, mode=ROLLOUT).check()
            return
        super().check()
        if self.rollouts_per_start < 2:
            raise GemError("TRL's GRPOTrainer plays at least 2 episodes per start: set --n 2 or more.")
        if (self.batch_size * self.rollouts_per_start) % self.processes:
            raise GemError(f"batch size x episodes per start ({self.batch_size * self.rollouts_per_start}) "
                           f"must be divisible by the number of processes ({self.processes}), as TRL requires.")

    @property
    def processes(self) -> int:
        return 1 if self.cpu else self.total_gpus


def write_run(settings: RunSettings, *, progress: Any = None) -> WrittenRun:
    """Write the datasets and the config file into ``settings.out_dir``; ``progress``, when given,
    is called with the number of rows written so far."""
    settings.check()
    yaml = yaml_writer("trl", hydra=False)  # fail before writing anything
    out = settings.out_dir.expanduser().resolve()
    files = (out / "train.jsonl", out / "val.jsonl")
    row = factory_row(len(settings.env_ids) > 1) if settings.mode == FACTORY else dataset_row
    return written.write_run(settings, row=row, file_name=CONFIG_FILE,
                             file_text=config_text(settings, *files, yaml),
                             launch_argv=lambda train, val, file: launch_argv(settings, file), progress=progress)


def dataset_row(env_id: str, seed: int, index: int, split: str, observation: str) -> dict[str, Any]:
    """One row as GRPOTrainer reads it (the extra columns reach the rollout and reward functions)."""
    return {"prompt": [{"role": "user", "content": observation}], "env_id": env_id, "seed": seed}


def factory_row(several: bool):
    """Rows for the factory mode: an empty user message that ``reset`` completes, and with
    ``several`` environment ids the ``environment`` column TRL routes by."""

    def row(env_id: str, seed: int, index: int, split: str, observation: str) -> dict[str, Any]:
        return {"prompt": [{"role": "user", "content": ""}], "env_id": env_id, "seed": seed,
                **({"environment": env_id} if several else {})}

    return row


def trl_config(settings: RunSettings, train: Path, val: Path) -> dict[str, Any]:
    """The config's keys: GEM's (:class:`~gem_adapters.trl.train.GemArguments`), then GRPOConfig's."""
    episodes = settings.batch_size * settings.rollouts_per_start
    common = {"model_name_or_path": settings.model, "train_file": str(train), "eval_file": str(val),
              "gem_mode": settings.mode}
    if settings.mode == FACTORY:
        gem = {"gem_env_ids": list(settings.env_ids), "gem_wrappers": list(settings.options.wrappers),
               "gem_max_turns": settings.options.max_turns, "gem_episode_deadline": settings.options.episode_deadline}
        # TRL's tool loop: the whole episode after the prompt within max_completion_length
        turns = {"max_completion_length": settings.response_length,
                 **({"max_tool_calling_iterations": settings.options.max_turns} if settings.options.max_turns else {})}
    else:
        gem = {"gem_estimator": settings.estimator, "gem_gamma": settings.gamma,
               "gem_wrappers": list(settings.options.wrappers), "gem_max_turns": settings.options.max_turns,
               "gem_episode_deadline": settings.options.episode_deadline, "gem_episode_tokens": settings.response_length}
        turns = {"max_completion_length": settings.options.max_tokens_per_turn or settings.response_length}
    return {
        **common,
        **gem,
        "output_dir": str(settings.out_dir.expanduser().resolve() / "checkpoints"),
        "per_device_train_batch_size": episodes // settings.processes,
        "num_generations": settings.rollouts_per_start,
        **turns,
        "learning_rate": settings.learning_rate,
        "num_train_epochs": settings.epochs,
        "seed": settings.seed,
        "beta": 0.0,
        "temperature": 1.0,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "use_cpu": settings.cpu,
        "bf16": not settings.cpu,
    }


def config_text(settings: RunSettings, train: Path, val: Path, yaml: Any) -> str:
    command = command_line(launch_argv(settings, train.parent / CONFIG_FILE))
    return ("# TRL config for GEM environments, written by `gem trl config`.\n"
            f"# Train: {command} [--key value ...]\n"
            "# gem_* keys (and model_name_or_path, train_file, eval_file) are GEM's; the others are GRPOConfig's.\n"
            + yaml(trl_config(settings, train, val)))


def launch_argv(settings: RunSettings, config: Path) -> list[str]:
    """One process: ``python -m``; several GPUs: under ``accelerate launch``."""
    if settings.processes > 1:
        machines = [f"--num_machines={settings.nodes}"] if settings.nodes > 1 else []
        return ["accelerate", "launch", f"--num_processes={settings.processes}", *machines,
                "-m", TRAIN_MODULE, "--config", str(config)]
    return python_command("-m", TRAIN_MODULE, "--config", str(config))

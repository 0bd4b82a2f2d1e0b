"""Writes what verl's own launcher needs to train on GEM environments: a Hydra config built on
verl's packaged defaults, and the (environment id, seed) datasets its dataloader reads (see
:mod:`gem_adapters.common.dataset`). The ``gem`` agent loop makes and resets each row's
environment itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from gem_adapters.common.dataset import write_splits
from gem_adapters.common.estimators import library_name
from gem_adapters.common.launch import command_line, python_command
from gem_adapters.common.settings import RunSettings as CommonSettings
from gem_adapters.common.written import yaml_writer
from gem_adapters.verl import AGENT_LOOP_NAME, HARNESS_LOOP_NAME
from gem_adapters.verl.cpu_config import cpu_config, merged
from gem_adapters.verl.cpu_sizing import ModelSize, model_size
from gem_core.errors import GemError

CONFIG_NAME = "gem_verl"
ROLLOUT_ENGINES = ("vllm", "sglang")
DEVICES = ("cuda", "cpu")
MICRO_BATCH_PER_GPU = 4
#: CPUs verl 0.9's trainer reserves for each GPU: the GPU's bundle in the placement group of its
#: worker groups (``ResourcePoolManager.max_colocate_count``).
WORKER_CPUS_PER_GPU = 3


@dataclass(frozen=True)
class RunSettings(CommonSettings):
    """What ``gem verl config`` asks for: the shared settings plus verl's rollout engine and the
    device to train on (``cpu``: see :mod:`gem_adapters.verl.cpu_config`)."""

    rollout_engine: str = "vllm"
    device: str = "cuda"
    agent: str | None = None  # an agent program: the rows are the gem_agent loop's (see gem_adapters.verl.harness)
    agent_timeout: float = 600.0

    def check(self) -> None:
        """Raise a :class:`GemError` for settings verl would reject or GEM cannot serve."""
        super().check()
        if self.rollout_engine not in ROLLOUT_ENGINES:
            raise GemError(f"The rollout engine must be one of {', '.join(ROLLOUT_ENGINES)}, "
                           f"not {self.rollout_engine!r}.")
        if self.device not in DEVICES:
            raise GemError(f"The device must be one of {', '.join(DEVICES)}, not {self.device!r}.")
        if self.device == "cpu" and self.rollout_engine != "vllm":
            raise GemError("A CPU run rolls out with vLLM's CPU build: leave --rollout at vllm.")
        if self.device == "cpu" and self.total_gpus != 1:
            raise GemError("A CPU run trains in one worker process on one machine: leave --gpus and --nodes at 1.")
        if self.agent is not None:
            from gem_adapters.common.options import AgentOptions

            AgentOptions.from_config({"program": self.agent, "timeout": self.agent_timeout})
            if self.options.env_pool is not None:
                raise GemError("--agent plays its environments in verl's rollout worker: leave out --env-pool.")
        if (self.batch_size * self.rollouts_per_start) % self.total_gpus:
            raise GemError("batch size x rollouts per start must be divisible by the number of GPUs "
                           f"({self.total_gpus}), as verl requires.")


@dataclass(frozen=True)
class WrittenRun:
    config: Path
    train: Path
    val: Path
    longest_prompt: int  # characters of the longest first observation

    @property
    def command(self) -> str:
        """The native launch command for this config."""
        return command_line(python_command("-m", "verl.trainer.main_ppo", "--config-path",
                                           str(self.config.parent), "--config-name", self.config.stem))


def write_run(settings: RunSettings, *, progress: Any = None,
              on_convert: Callable[[str], None] | None = None) -> WrittenRun:
    """Write the datasets and the config into ``settings.out_dir``.

    ``progress``, when given, is called with the number of rows written so far; ``on_convert`` is
    told when the built-in model is converted (once).
    """
    settings.check()
    yaml = yaml_writer("verl", hydra=True)  # fail before writing anything
    settings = replace(settings, model=model_path(settings.model, on_convert=on_convert))
    size = model_size(settings.model) if settings.device == "cpu" else None
    out = settings.out_dir.expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    loop = AGENT_LOOP_NAME if settings.agent is None else HARNESS_LOOP_NAME
    splits = write_splits(settings, out, partial(dataset_row, agent_name=loop), progress=progress)
    config = out / f"{CONFIG_NAME}.yaml"
    config.write_text(config_text(settings, splits.train, splits.val, yaml, size))
    return WrittenRun(config, splits.train, splits.val, splits.longest_prompt)


def dataset_row(env_id: str, seed: int, index: int, split: str, observation: str, *,
                agent_name: str = AGENT_LOOP_NAME) -> dict[str, Any]:
    """One row in the layout verl's RLHFDataset reads, played by the agent loop ``agent_name``.
    The rewards come from the environment, so ``reward_model.ground_truth`` names the episode
    instead (``"<env id> seed <seed>"``), which is what verl's rollout dumps
    (``trainer.rollout_data_dir``) show of each sample."""
    return {
        "data_source": env_id,
        "agent_name": agent_name,
        "prompt": [{"role": "user", "content": observation}],
        "reward_model": {"style": "gem", "ground_truth": f"{env_id} seed {seed}"},
        "extra_info": {"env_id": env_id, "seed": seed, "index": index, "split": split},
    }


def model_path(model: str, *, on_convert: Callable[[str], None] | None = None) -> str:
    """``smollm2`` is the built-in model, as a plain Hugging Face folder (converted once, offline);
    anything else goes to verl as it is."""
    from gem_trainer.models import DEFAULT_MODEL, resolve_model

    return str(resolve_model(model, on_convert=on_convert)) if model == DEFAULT_MODEL else model


def verl_config(settings: RunSettings, train: Path, val: Path, size: ModelSize | None = None) -> dict[str, Any]:
    """The config as a plain dict, on top of verl's ``ppo_trainer`` defaults; a CPU config needs the
    model's ``size``."""
    config = gpu_config(settings, train, val)
    if settings.agent is not None:
        config["gem_agent"] = {"program": settings.agent, "timeout": settings.agent_timeout}
    if settings.device != "cpu":
        return config
    if size is None:
        raise GemError("A CPU config is sized for its model: pass the model's size.")
    cpu = cpu_config(size, max_model_len=settings.prompt_length + settings.response_length,
                     sequences=settings.batch_size * settings.rollouts_per_start, cluster_cpus=cluster_cpus(settings))
    return merged(config, cpu)


def gpu_config(settings: RunSettings, train: Path, val: Path) -> dict[str, Any]:
    """The config as verl runs it on GPUs."""
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
            "adv_estimator": library_name(settings.estimator),
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
        "transfer_queue": {"backend": {"SimpleStorage": {"num_data_storage_units": storage_units(settings)}}},
    }


def storage_units(settings: RunSettings) -> int:
    """Storage units of verl's TransferQueue for the cluster the settings target: one per GPU.

    Each unit holds one CPU of the Ray cluster, and verl starts them before anything else and waits
    for them without a word: its default of 8 hangs a launch on a cluster with fewer free CPUs (a
    one-GPU workstation).
    """
    return settings.total_gpus


def cluster_cpus(settings: RunSettings) -> int:
    """CPUs the launch holds in the Ray cluster: TransferQueue's controller and storage units, and
    verl's worker bundles. On a cluster with fewer, verl waits for them without end."""
    return 1 + storage_units(settings) + WORKER_CPUS_PER_GPU * settings.total_gpus


def cluster_needs(settings: RunSettings) -> str:
    """What the launch needs of the Ray cluster, in words."""
    if settings.device == "cpu":
        return (f"verl starts a local cluster of {cluster_cpus(settings)} logical CPUs and 1 'GPU', the resource "
                "its CPU worker is placed on")
    gpus = settings.total_gpus
    return (f"{cluster_cpus(settings)} CPUs and {gpus} GPU{'s' if gpus > 1 else ''} at least: "
            f"{WORKER_CPUS_PER_GPU} CPUs per GPU for verl's workers, 1 for its TransferQueue's controller and "
            "1 per GPU for the queue's storage units")


def experiment_name(settings: RunSettings) -> str:
    first = settings.env_ids[0].replace(":", "-")
    more = f"-and-{len(settings.env_ids) - 1}-more" if len(settings.env_ids) > 1 else ""
    return f"{first}{more}-{settings.estimator}"


def config_text(settings: RunSettings, train: Path, val: Path, yaml: Any, size: ModelSize | None = None) -> str:
    """The config file: a header saying how to launch it, then the YAML."""
    body = yaml(verl_config(settings, train, val, size))
    command = WrittenRun(train.parent / f"{CONFIG_NAME}.yaml", train, val, 0).command
    return (
        "# verl config for GEM environments, written by `gem verl config`.\n"
        f"# Launch: {command} [key=value ...]\n"
        "# The `gem` section configures the gem agent loop (see gem_adapters.common.options).\n"
        f"# Ray cluster: {cluster_needs(settings)}.\n"
        f"{body}"
    )

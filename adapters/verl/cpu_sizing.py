"""How much of a machine a CPU run of verl takes, from the model's config alone.

A CPU run keeps everything in float32 (a CPU has no fast half-precision matrix units to speak of):
the trainer holds the weights, their gradients and Adam's two moments (16 bytes a parameter), vLLM
holds a copy of the weights (4 bytes a parameter) and its KV cache, and the weight copy after each
step passes through a shared-memory bucket at least as large as the largest tensor. The model is
never loaded: transformers builds it on the meta device, which takes no memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gem_core.errors import GemError

FLOAT32 = 4
MiB = 1 << 20
GiB = 1 << 30
#: Bytes a parameter takes in the trainer: float32 weight and gradient, Adam's two moments.
TRAINER_BYTES_PER_PARAMETER = 4 * FLOAT32
#: Memory the processes of a run take besides the model (verl's and Ray's processes, vLLM's
#: engine, PyTorch): SmolLM2-135M's run peaked at 9.8 GiB (proportional set sizes summed), 7 GiB
#: of which were not the model's.
PROCESS_OVERHEAD = 7 * GiB
#: The KV cache holds this many full-length sequences at least (vLLM queues the rest).
KV_SEQUENCES = 8
MIN_KV_CACHE = 256 * MiB


@dataclass(frozen=True)
class ModelSize:
    """What the memory of a CPU run depends on."""

    parameters: int
    largest_tensor_bytes: int  # in float32
    kv_bytes_per_token: int  # in float32, all layers

    def kv_cache_bytes(self, max_model_len: int, sequences: int) -> int:
        """A KV cache for ``sequences`` (at most :data:`KV_SEQUENCES`) of ``max_model_len`` tokens,
        rounded up to a MiB."""
        wanted = self.kv_bytes_per_token * max_model_len * max(1, min(sequences, KV_SEQUENCES))
        return max(MIN_KV_CACHE, math.ceil(wanted / MiB) * MiB)

    def bucket_megabytes(self) -> int:
        """verl's weight-copy bucket: larger than the largest tensor, which verl would otherwise send
        through CUDA IPC (``BucketedWeightSender._direct_send_large_weight``)."""
        return max(128, 2 ** math.ceil(math.log2(self.largest_tensor_bytes / MiB + 1)))

    def memory_needed(self, kv_cache_bytes: int, bucket_megabytes: int, *, reference_model: bool) -> int:
        """Bytes of memory the run takes at its peak, about."""
        per_parameter = TRAINER_BYTES_PER_PARAMETER + FLOAT32 + (FLOAT32 if reference_model else 0)
        buckets = 2 * bucket_megabytes * MiB  # the sender's shared memory and vLLM's copies of one bucket
        return self.parameters * per_parameter + kv_cache_bytes + buckets + PROCESS_OVERHEAD


def model_size(model: str | Path) -> ModelSize:
    """The size of the Hugging Face model ``model`` (a folder or a hub id), built on the meta device."""
    try:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM
    except ImportError as error:
        raise GemError(f"Sizing a CPU run needs torch and transformers: {error}") from None
    try:
        config = AutoConfig.from_pretrained(str(model))
        with torch.device("meta"):
            built = AutoModelForCausalLM.from_config(config)
    except (OSError, ValueError, KeyError) as error:
        raise GemError(f"Cannot read the model {str(model)!r} to size a CPU run: {error}") from None
    tensors = list(built.parameters())
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return ModelSize(parameters=sum(t.numel() for t in tensors),
                     largest_tensor_bytes=max(t.numel() for t in tensors) * FLOAT32,
                     kv_bytes_per_token=kv_bytes_per_token(text))


def kv_bytes_per_token(text_config: Any) -> int:
    """Keys and values of one token over every layer, in float32."""
    heads = getattr(text_config, "num_attention_heads", 1)
    kv_heads = getattr(text_config, "num_key_value_heads", None) or heads
    head_dim = getattr(text_config, "head_dim", None) or text_config.hidden_size // heads
    return 2 * text_config.num_hidden_layers * kv_heads * head_dim * FLOAT32


def machine_memory() -> int:
    """Bytes of memory of this machine."""
    import os

    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def gib(size: float) -> str:
    return f"{size / GiB:.1f} GiB"

"""A memory estimate made before training, so a batch that cannot fit fails at once, and the
micro-batch size on a GPU.

Peak memory is bounded by design: sampling holds one batch of at most ``episodes_per_step``
prompts, and the loss runs on micro-batches of at most ``micro_batch_tokens`` padded tokens (one
longer sequence goes alone). The estimate adds, from the model's config:

* weights, plus gradients and two AdamW moments of the trainable parameters, plus with LoRA the
  copy of the weights with the adapters merged that sampling reads;
* activations kept for the backward pass, per token: ``layers * (16 * hidden + 6 * intermediate)``
  values (measured on SmolLM2 at about 1.8 MB per token in float32, below this bound);
* the key/value cache of one sampling batch, and the prefix cache kept between turns (two
  batches' worth at most).

It is compared with the free memory of the device (RAM on CPU, free GPU memory on CUDA) and a
shortfall raises :class:`MemoryBudgetError` naming the settings to lower.

When ``micro_batch_tokens`` is not set, :func:`micro_batch_tokens` chooses it: 2048 on a CPU
(each micro-batch computes the shared opening again: on a mid-run step of the default run, 2048
trained in 9.8-10.6 s of CPU where 1024 took 12.9-13.2 s, and a 16-episode step fits); on CUDA as many as half the
memory the estimate leaves free holds (at most :data:`MAX_MICRO_BATCH_TOKENS`), since there every
micro-batch also pays some ten thousand kernel launches whatever its size, so fewer, larger ones
are faster. On a GPU the sampling buffers stay allocated while the model trains, so both count
there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gem_core.errors import GemError

GIB = 1024**3
HEADROOM = 0.9  # share of the free memory the estimate may use
#: ``micro_batch_tokens`` on a CPU when none is set.
CPU_MICRO_BATCH_TOKENS = 2048
#: The most tokens a micro-batch sized from GPU memory holds: a pass this large already keeps the
#: GPU busy far longer than it takes to launch.
MAX_MICRO_BATCH_TOKENS = 16384


class MemoryBudgetError(GemError, MemoryError):
    """The configured batch cannot fit in the device's memory."""


@dataclass(frozen=True)
class MemoryEstimate:
    static: int  # weights, gradients, optimizer state
    activations: int  # one training micro-batch
    sampling: int  # the key/value cache of one sampling batch

    @property
    def total(self) -> int:
        return self.static + max(self.activations, self.sampling)


def estimate_training_memory(model: Any, parameters: list[Any], config: Any,
                             micro_batch_tokens: int | None = None) -> MemoryEstimate:
    """Bytes needed to train ``model`` with ``config`` (see the module docstring), with micro-batches
    of ``micro_batch_tokens`` (default: the config's, else the CPU default)."""
    model_config = _text_config(model)
    element = next(iter(parameters)).element_size()
    total_params = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in parameters)
    static = total_params * element + trainable * element * 3
    if getattr(config, "lora", False):
        static += total_params * element  # the merged copy sampling reads

    longest = config.max_prompt_tokens + config.max_new_tokens
    tokens = max(micro_batch_tokens or config.micro_batch_tokens or CPU_MICRO_BATCH_TOKENS, longest)
    activations = tokens * activation_bytes_per_token(model, element)

    layers = getattr(model_config, "num_hidden_layers", 12)
    hidden = getattr(model_config, "hidden_size", 768)
    heads = getattr(model_config, "num_attention_heads", 12)
    kv_heads = getattr(model_config, "num_key_value_heads", None) or heads
    head_dim = getattr(model_config, "head_dim", None) or hidden // heads
    vocab = getattr(model_config, "vocab_size", 32000)
    batch = config.episodes_per_step
    kv_cache = batch * longest * layers * 2 * kv_heads * head_dim * element
    sampling = 3 * kv_cache + batch * vocab * 4 * 4  # the batch, the prefix cache, the logits of a step
    return MemoryEstimate(static, activations, sampling)


def activation_bytes_per_token(model: Any, element: int) -> int:
    """The bound on the activations one token keeps for the backward pass (module docstring)."""
    model_config = _text_config(model)
    layers = getattr(model_config, "num_hidden_layers", 12)
    hidden = getattr(model_config, "hidden_size", 768)
    intermediate = getattr(model_config, "intermediate_size", None) or 4 * hidden
    return layers * (16 * hidden + 6 * intermediate) * element


def micro_batch_tokens(model: Any, parameters: list[Any], config: Any, device: str) -> int:
    """Padded tokens per forward/backward pass: ``config.micro_batch_tokens`` when set; else
    :data:`CPU_MICRO_BATCH_TOKENS` on a CPU, and on CUDA half of what the free memory holds once
    the rest of the estimate is counted, rounded down to a multiple of 256, between the longest
    sequence and :data:`MAX_MICRO_BATCH_TOKENS`."""
    if config.micro_batch_tokens:
        return config.micro_batch_tokens
    if not device.startswith("cuda"):
        return CPU_MICRO_BATCH_TOKENS
    estimate = estimate_training_memory(model, parameters, config, micro_batch_tokens=1)
    room = available_memory(device) * HEADROOM - estimate.static - estimate.sampling
    tokens = int(room / 2 // activation_bytes_per_token(model, next(iter(parameters)).element_size())) // 256 * 256
    return max(min(tokens, MAX_MICRO_BATCH_TOKENS), config.max_prompt_tokens + config.max_new_tokens)


def available_memory(device: str) -> int:
    """Free bytes on ``device``."""
    if device.startswith("cuda"):
        import torch

        free, _ = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    import psutil

    return int(psutil.virtual_memory().available)


def check_training_memory(model: Any, parameters: list[Any], config: Any, device: str,
                          micro_batch_tokens: int | None = None) -> MemoryEstimate:
    """Raise :class:`MemoryBudgetError` when the estimate exceeds the free memory (micro-batches of
    ``micro_batch_tokens``, default the config's). On CUDA the sampling buffers count beside the
    activations, since they stay allocated while the model trains."""
    estimate = estimate_training_memory(model, parameters, config, micro_batch_tokens)
    free = available_memory(device)
    budget = free * HEADROOM
    on_gpu = device.startswith("cuda")
    need = estimate.static + estimate.activations + estimate.sampling if on_gpu else estimate.total
    if need <= budget:
        return estimate
    where = "GPU" if on_gpu else "RAM"
    tokens = micro_batch_tokens or config.micro_batch_tokens or CPU_MICRO_BATCH_TOKENS
    fixes = []
    if estimate.activations > estimate.sampling:
        fixes.append(f"--micro-batch-tokens (now {tokens}; gradients accumulate over micro-batches)")
        fixes.append(f"--max-prompt-tokens/--max-new-tokens (now {config.max_prompt_tokens}/{config.max_new_tokens})")
    else:
        fixes.append(f"--episodes-per-step (now {config.episodes_per_step}; it is also the sampling batch)")
        fixes.append(f"--max-new-tokens (now {config.max_new_tokens})")
    if not config.lora:
        fixes.append("--lora (trains small adapters instead of every weight)")
    raise MemoryBudgetError(
        f"This run needs about {need / GIB:.1f} GiB but {where} has {free / GIB:.1f} GiB free "
        f"(weights and optimizer {estimate.static / GIB:.1f} GiB, training micro-batch "
        f"{estimate.activations / GIB:.1f} GiB, sampling batch {estimate.sampling / GIB:.1f} GiB). "
        f"Lower {'; or '.join(fixes)}."
    )


def _text_config(model: Any) -> Any:
    config = model.config
    return getattr(config, "text_config", None) or config

"""How this package calls a transformers causal language model, whichever version is installed:
the keyword that passes a key/value cache, whether ``logits_to_keep`` is taken, a cache that
shows what it holds, a cache that writes into a buffer of fixed shape, and attention masks of our
own making (which positions each token reads), for the models that take them."""

from __future__ import annotations

import functools
import inspect
from typing import Any


def forward_parameters(model: Any) -> frozenset[str]:
    """The keyword parameters of the model's forward (a peft model's base model's)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return _parameters(type(base).forward)


@functools.lru_cache(maxsize=None)
def _parameters(forward: Any) -> frozenset[str]:
    try:
        return frozenset(inspect.signature(forward).parameters)
    except (TypeError, ValueError):
        return frozenset()


#: Attention implementations that take an attention mask of our own making.
MASKED_ATTENTION = ("sdpa", "eager")


def takes_explicit_mask(model: Any) -> bool:
    """Whether every layer of ``model`` attends to the full context, through an attention that
    takes a mask of our own making (:func:`explicit_mask`): a decoder-only model without
    sliding-window or recurrent layers, using ``sdpa`` or ``eager`` attention."""
    config = model.config
    config = getattr(config, "text_config", None) or config
    if getattr(config, "is_encoder_decoder", False):
        return False
    layer_types = getattr(config, "layer_types", None)
    if layer_types and any(kind != "full_attention" for kind in layer_types):
        return False
    if getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True):
        return False
    return getattr(config, "_attn_implementation", None) in MASKED_ATTENTION


def explicit_mask(model: Any, allowed: Any, dtype: Any) -> Any:
    """The attention mask ``model`` takes for ``allowed`` (bool, batch x 1 x queries x keys: which
    keys each query reads): as it is for ``sdpa``; added to the scores for ``eager``, so 0 where
    allowed and the lowest ``dtype`` value elsewhere."""
    import torch

    config = getattr(model.config, "text_config", None) or model.config
    if getattr(config, "_attn_implementation", None) != "eager":
        return allowed
    return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill_(~allowed, torch.finfo(dtype).min)


def cache_options(model: Any, cache: Any, *, logits_to_keep: int | None = None) -> dict[str, Any]:
    """Keyword arguments passing ``cache`` to the model (``cache=`` in recent transformers,
    ``past_key_values=`` before) and, when the model takes it, ``logits_to_keep``."""
    parameters = forward_parameters(model)
    options = {"cache" if "cache" in parameters else "past_key_values": cache, "use_cache": True}
    if logits_to_keep is not None and "logits_to_keep" in parameters:
        options["logits_to_keep"] = logits_to_keep
    return options


def recording_cache(layers: list[tuple[Any, Any]] | None = None) -> Any:
    """A transformers ``DynamicCache`` that also keeps, per layer, the full keys and values the
    model last updated it to (``.kv``), filled with ``layers`` (keys, values) when given."""
    cache = _recording_cache_class()()
    for index, (keys, values) in enumerate(layers or ()):
        cache.update(keys, values, index)
    return cache


@functools.cache
def _recording_cache_class() -> type:
    from transformers import DynamicCache

    class RecordingCache(DynamicCache):
        def __init__(self) -> None:
            super().__init__()
            self.kv: dict[int, tuple[Any, Any]] = {}

        def update(self, key_states: Any, value_states: Any, layer_idx: int, *args: Any, **kwargs: Any) -> Any:
            keys, values = super().update(key_states, value_states, layer_idx, *args, **kwargs)
            self.kv[layer_idx] = (keys, values)
            return keys, values

    return RecordingCache


def buffer_cache(kv: Any, columns: Any) -> Any:
    """A transformers cache over ``kv`` (layers x 2 x rows x kv_heads x positions x head_dim): each
    layer writes the keys and values of the tokens read at the positions ``columns`` (a long
    tensor on the buffer's device) and attends to the whole buffer, so the caller's attention mask
    says which positions count. Nothing is allocated or read back: a forward pass through it can
    be captured as a CUDA graph."""
    return _buffer_cache_class()(kv, columns)


@functools.cache
def _buffer_cache_class() -> type:
    from transformers import DynamicCache

    class BufferCache(DynamicCache):
        def __init__(self, kv: Any, columns: Any) -> None:
            super().__init__()
            self.buffer, self.columns = kv, columns

        def update(self, key_states: Any, value_states: Any, layer_idx: int, *args: Any, **kwargs: Any) -> Any:
            keys, values = self.buffer[layer_idx, 0], self.buffer[layer_idx, 1]
            keys.index_copy_(2, self.columns, key_states.to(keys.dtype))
            values.index_copy_(2, self.columns, value_states.to(values.dtype))
            return keys, values

        def get_seq_length(self, layer_idx: int = 0) -> int:
            return self.buffer.shape[-2]

    return BufferCache

"""The decoder `gem train` sampled with before its key/value buffer of fixed shape, kept to measure
the new one against (``bench/workloads/gpu_rollout.py``) and to check that both give the same tokens.

It is :class:`gem_trainer.decoding.cached_decoder.CachedDecoder` with that decoder's batch: a transformers
``DynamicCache`` that every decoding step grows by concatenation (a copy of every layer's keys and
values per token), the attention mask grown with it, and ``torch.multinomial`` to sample. It always
decodes on the host, reading every token back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gem_trainer.decoding.cached_decoder import CachedDecoder
from gem_trainer.decoding.prefix_cache import CachedPrefix
from gem_trainer.model_calls import cache_options, recording_cache


class DynamicCacheDecoder(CachedDecoder):
    """Samples as ``gem train`` did before its decoder's static buffer (see the module docstring)."""

    def __init__(self, model: Any, cache: Any, *, stop_ids: set[int], pad_id: int):
        super().__init__(model, cache, stop_ids=stop_ids, pad_id=pad_id, device_loop=False, cuda_graphs=False)

    def _batch(self, heads: list[CachedPrefix], new: list[np.ndarray], *, extra_columns: int) -> Any:
        return _Batch(self, heads, new, extra_columns=extra_columns)

    def _pick(self, logits: Any, temperature: float, top_p: float, generators: list[Any] | None) -> Any:
        import torch

        if temperature <= 0:
            return logits.argmax(-1)
        probs = torch.softmax(logits.float() / temperature, dim=-1)
        if top_p < 1.0:  # drawn in vocabulary order
            sorted_probs, order = probs.sort(dim=-1, descending=True)
            outside = sorted_probs.cumsum(-1) - sorted_probs > top_p  # the most likely token always stays
            probs = probs.masked_fill(torch.zeros_like(outside).scatter(-1, order, outside), 0.0)
        if generators is None:
            return torch.multinomial(probs, 1).squeeze(-1)
        return torch.cat([torch.multinomial(row, 1, generator=g) for row, g in zip(probs, generators)])


class _Batch:
    """Rows of cached prefixes and new tokens, read in one forward pass, then grown one decoded
    token per :meth:`step`. ``logits``: each row's next-token logits."""

    def __init__(self, decoder: DynamicCacheDecoder, heads: list[CachedPrefix], new: list[np.ndarray], *,
                 extra_columns: int):
        import torch

        self.decoder = decoder
        rows = len(heads)
        cached = max(len(head) for head in heads)
        width = max(len(tokens) for tokens in new)
        device = decoder.device
        self.mask = torch.zeros(rows, cached + width + extra_columns, dtype=torch.long, device=device)
        input_ids = torch.full((rows, width), decoder.pad_id, dtype=torch.long)
        positions = torch.zeros(rows, width, dtype=torch.long)
        self.cache = recording_cache()
        if cached:
            template = next(head.kv for head in heads if len(head))
            layers, _, kv_heads, _, head_dim = template.shape
            kv = torch.zeros(layers, 2, rows, kv_heads, cached, head_dim, dtype=template.dtype, device=device)
            for row, head in enumerate(heads):
                if len(head):
                    kv[:, :, row, :, cached - len(head):] = head.kv
            self.cache = recording_cache([(kv[layer, 0], kv[layer, 1]) for layer in range(layers)])
        for row, (head, tokens) in enumerate(zip(heads, new)):
            self.mask[row, cached - len(head):cached] = 1
            self.mask[row, cached + width - len(tokens):cached + width] = 1
            input_ids[row, width - len(tokens):] = torch.from_numpy(np.asarray(tokens, dtype=np.int64))
            positions[row, width - len(tokens):] = torch.arange(len(head), len(head) + len(tokens))
        self.width = cached + width
        self.next_position = (positions[:, -1] + 1).to(device)
        self.logits = self._forward(input_ids.to(device), positions.to(device))

    def step(self, tokens: Any) -> None:
        """Read one more token per row."""
        self.mask[:, self.width] = 1
        self.width += 1
        positions = self.next_position[:, None]
        self.next_position = self.next_position + 1
        self.logits = self._forward(tokens[:, None].to(self.mask.device), positions)

    def select(self, rows: list[int]) -> None:
        """Keep only these rows."""
        import torch

        index = torch.tensor(rows, device=self.mask.device)
        layers = self.cache.kv
        self.cache = recording_cache([(layers[layer][0].index_select(0, index), layers[layer][1].index_select(0, index))
                                      for layer in range(len(layers))])
        self.mask = self.mask.index_select(0, index)
        self.next_position = self.next_position.index_select(0, index)

    def row_kv(self, row: int, decoded: int = 0) -> Any:
        """One row's keys and values without padding: layers x 2 x kv_heads x tokens x head_dim
        (every column the mask holds, so ``decoded`` is implied)."""
        import torch

        columns = self.mask[row, :self.width].nonzero().squeeze(1)
        layers = self.cache.kv
        return torch.stack([torch.stack((layers[layer][0][row].index_select(1, columns),
                                         layers[layer][1][row].index_select(1, columns)))
                            for layer in range(len(layers))])

    def _forward(self, input_ids: Any, positions: Any) -> Any:
        out = self.decoder.model(input_ids=input_ids, attention_mask=self.mask[:, :self.width], position_ids=positions,
                                 **cache_options(self.decoder.model, self.cache, logits_to_keep=1))
        return out.logits[:, -1, :]

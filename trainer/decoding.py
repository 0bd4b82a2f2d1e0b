"""Batched sampling that reads cached prefixes and computes only the tokens it has not seen.

:class:`CachedDecoder` samples one response per tokenised prompt in three phases:

1. a prefix that several prompts share beyond what is cached (the instructions that open every
   episode of an environment) is computed once and cached;
2. each prompt's tokens past its longest cached prefix, all but the last, are read in batches of
   similar length, so little is spent on padding;
3. the whole batch decodes from each prompt's last token; rows that have finished leave the batch
   as it goes.

Each prompt with its response is then cached (all but the last sampled token, which the model
has not read), so the next turn of the episode, whose prompt extends it, only reads the new
observation. A batch lays each row out as ``[padding | cached prefix | padding | new tokens]``:
the attention mask hides the padding and the position ids count real tokens only, so every row
is computed as it would be alone.

It serves decoder-only models whose every layer attends to the full context (Llama, Qwen, Mistral
without a sliding window, ...); :func:`supports_cached_decoding` tells.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from gem_trainer.model_calls import cache_options, recording_cache
from gem_trainer.prefix_cache import CachedPrefix, PrefixCache, common_prefix_length

#: Padded new tokens read per forward pass in phase 2.
PREFILL_TOKENS = 2048
#: Shorter shared prefixes are not worth a pass of their own in phase 1.
MIN_SHARED_TOKENS = 16


def supports_cached_decoding(model: Any) -> bool:
    """Whether ``model`` is a decoder-only model whose every layer keeps a full key/value cache."""
    config = model.config
    config = getattr(config, "text_config", None) or config
    if getattr(config, "is_encoder_decoder", False):
        return False
    layer_types = getattr(config, "layer_types", None)
    if layer_types and any(kind != "full_attention" for kind in layer_types):
        return False
    if getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True):
        return False
    return True


class CachedDecoder:
    """Samples responses for tokenised prompts, keeping what it computed in ``cache``."""

    def __init__(self, model: Any, cache: PrefixCache, *, stop_ids: set[int], pad_id: int):
        self.model = model
        self.cache = cache
        self.stop_ids = stop_ids
        self.pad_id = pad_id
        self.device = next(model.parameters()).device

    def sample(self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int, temperature: float,
               top_p: float, seeds: Sequence[int] | None = None) -> list[list[int]]:
        """One response per prompt: sampled token ids, ending with a stop token unless cut off at
        ``max_new_tokens``. ``temperature`` 0 is greedy. ``seeds`` (one per prompt) samples each
        prompt from a generator of its own, so its response does not depend on the rest of the
        batch; without them, the batch draws from torch's generator."""
        import torch

        ids = [np.asarray(prompt, dtype=np.int64) for prompt in prompts]
        if not ids:
            return []
        if any(len(seq) == 0 for seq in ids):
            raise ValueError("Every prompt needs at least one token to continue from.")
        with torch.inference_mode():
            self._cache_shared_prefixes([seq[:-1] for seq in ids])
            heads = self._read_prompts(ids)
            generators = None
            if seeds is not None and temperature > 0:
                generators = [torch.Generator(self.device).manual_seed(seed) for seed in seeds]
            return self._decode(ids, heads, max_new_tokens, temperature, top_p, generators)

    # ---- phase 1 and 2: reading prompts -----------------------------------------------------

    def _cache_shared_prefixes(self, heads: list[np.ndarray]) -> None:
        """Compute once, shortest first, each prefix that two or more ``heads`` share beyond
        their cached part: the branching points of the prompts' tree."""
        order = sorted(range(len(heads)), key=lambda row: heads[row].tolist())
        shared: dict[bytes, np.ndarray] = {}
        for a, b in zip(order, order[1:]):
            length = common_prefix_length(heads[a], heads[b])
            if length >= MIN_SHARED_TOKENS:
                prefix = heads[a][:length]
                shared[prefix.tobytes()] = prefix
        for prefix in sorted(shared.values(), key=len):
            entry, cached = self.cache.longest_prefix(prefix)
            if len(prefix) - cached >= MIN_SHARED_TOKENS:
                self.cache.add(self._extend([_head(entry, cached)], [prefix[cached:]], [prefix])[0])

    def _read_prompts(self, ids: list[np.ndarray]) -> list[CachedPrefix]:
        """For each prompt, its tokens but the last with their keys and values: from the cache,
        and what the cache lacks computed in batches of similar length."""
        heads: list[CachedPrefix | None] = []
        missing: list[tuple[int, CachedPrefix, np.ndarray]] = []  # (row, cached head, tokens to read)
        for row, seq in enumerate(ids):
            entry, cached = self.cache.longest_prefix(seq[:-1])
            head = _head(entry, cached)
            if cached == len(seq) - 1:
                heads.append(head)
            else:
                heads.append(None)
                missing.append((row, head, seq[cached:-1]))
        for chunk in _by_length(missing, PREFILL_TOKENS):
            rows = [row for row, _, _ in chunk]
            read = self._extend([head for _, head, _ in chunk], [new for _, _, new in chunk],
                                [ids[row][:-1] for row in rows])
            for row, head in zip(rows, read):
                heads[row] = head
        return heads  # type: ignore[return-value]

    def _extend(self, heads: list[CachedPrefix], new: list[np.ndarray], full: list[np.ndarray]) -> list[CachedPrefix]:
        """The cached ``heads`` extended by reading their ``new`` tokens (``full`` = head + new)."""
        batch = _Batch(self, heads, new, extra_columns=0)
        return [CachedPrefix(seq, batch.row_kv(row)) for row, seq in enumerate(full)]

    # ---- phase 3: decoding ------------------------------------------------------------------

    def _decode(self, ids: list[np.ndarray], heads: list[CachedPrefix], max_new_tokens: int,
                temperature: float, top_p: float, generators: list[Any] | None) -> list[list[int]]:
        import torch

        batch = _Batch(self, heads, [seq[-1:] for seq in ids], extra_columns=max_new_tokens)
        responses: list[list[int]] = [[] for _ in ids]
        rows = list(range(len(ids)))  # batch row -> prompt index
        done = [False] * len(rows)  # per batch row: finished but still in the batch
        for _ in range(max_new_tokens):
            tokens = _pick(batch.logits, temperature, top_p, generators)
            for row, (index, token) in enumerate(zip(rows, tokens.tolist())):
                if done[row]:
                    continue
                responses[index].append(token)
                if token in self.stop_ids or len(responses[index]) == max_new_tokens:
                    done[row] = True
                    self.cache.add(CachedPrefix(np.concatenate([ids[index], responses[index][:-1]]).astype(np.int64),
                                                batch.row_kv(row)))
            if all(done):
                break
            if 4 * sum(done) >= len(done):  # enough finished rows to be worth dropping
                keep = [row for row, finished in enumerate(done) if not finished]
                batch.select(keep)
                tokens = tokens[torch.tensor(keep)]
                rows = [rows[row] for row in keep]
                generators = [generators[row] for row in keep] if generators else None
                done = [False] * len(rows)
            batch.step(tokens)
        return responses


def _by_length(items: list[tuple[int, CachedPrefix, np.ndarray]], budget: int,
               ) -> Iterator[list[tuple[int, CachedPrefix, np.ndarray]]]:
    """``(row, head, new tokens)`` items in chunks of similar length, shortest first, each holding
    at most ``budget`` padded new tokens (a longer item alone)."""
    chunk: list[tuple[int, CachedPrefix, np.ndarray]] = []
    for item in sorted(items, key=lambda item: len(item[2])):
        if chunk and (len(chunk) + 1) * len(item[2]) > budget:
            yield chunk
            chunk = []
        chunk.append(item)
    if chunk:
        yield chunk


def _head(entry: CachedPrefix | None, length: int) -> CachedPrefix:
    """The first ``length`` tokens of ``entry`` (an empty prefix without one)."""
    if entry is None or length == 0:
        return CachedPrefix(np.zeros(0, dtype=np.int64), None)
    return CachedPrefix(entry.ids[:length], entry.kv[:, :, :, :length])


def _pick(logits: Any, temperature: float, top_p: float, generators: list[Any] | None = None) -> Any:
    """A token per row of ``logits``: greedy at temperature 0, else sampled from the nucleus of
    probability ``top_p``, each row from its own generator when ``generators`` are given."""
    import torch

    if temperature <= 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    if top_p < 1.0:
        # draw in vocabulary order: the sorted order of near-equal probabilities moves with the
        # batch's rounding, which would change a seeded row's draw
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        outside = sorted_probs.cumsum(-1) - sorted_probs > top_p  # the most likely token always stays
        probs = probs.masked_fill(torch.zeros_like(outside).scatter(-1, order, outside), 0.0)
    if generators is None:
        return torch.multinomial(probs, 1).squeeze(-1)
    return torch.cat([torch.multinomial(row, 1, generator=g) for row, g in zip(probs, generators)])


class _Batch:
    """Rows of cached prefixes and new tokens, read in one forward pass, then grown one decoded
    token per :meth:`step`. ``logits``: each row's next-token logits."""

    def __init__(self, decoder: CachedDecoder, heads: list[CachedPrefix], new: list[np.ndarray], *,
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

    def row_kv(self, row: int) -> Any:
        """One row's keys and values without padding: layers x 2 x kv_heads x tokens x head_dim."""
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

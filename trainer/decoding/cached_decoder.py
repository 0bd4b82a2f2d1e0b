"""Batched sampling that reads cached prefixes and computes only the tokens it has not seen.

:class:`CachedDecoder` samples one response per tokenised prompt in three phases:

1. a prefix that several prompts share beyond what is cached (the instructions that open every
   episode of an environment) is computed once and cached;
2. each prompt's tokens past its longest cached prefix, all but the last, are read in batches of
   similar length, so little is spent on padding;
3. the whole batch decodes from each prompt's last token.

Each prompt with its response is then cached (all but the last sampled token, which the model
has not read), so the next turn of the episode, whose prompt extends it, only reads the new
observation.

A batch keeps its keys and values in one buffer of fixed shape (:class:`_Batch`), each row laid
out as ``[padding | cached prefix | padding | new tokens | decoded tokens]``: an attention mask of
the same shape says which positions each row reads, and the position ids count real tokens only,
so every row is computed as it would be alone. A decoding step writes one column of the buffer
and allocates nothing, which is what lets it be captured as a CUDA graph.

Decoding runs one of two loops (``device_loop``):

* on the host (the default on a CPU): each step's tokens are read back, and once a quarter of
  the batch has finished, finished rows leave it;
* on the device (the default on CUDA): every row stays, the sampled tokens stay on the device,
  and the host looks only every :data:`CHECK_EVERY` steps whether all rows have finished. On CUDA
  one decoding step (the forward pass, sampling and the step's bookkeeping, some 450 kernels for
  a 30-layer model) is captured once per batch shape as a CUDA graph
  (:mod:`gem_trainer.decoding.cuda_graphs`) and replayed as one launch.

Sampling draws the same random numbers as ``torch.multinomial`` does for one sample per row, so
the host loop gives, seed for seed, the tokens the earlier decoder (a transformers
``DynamicCache`` grown by concatenation) gave.

It serves decoder-only models whose every layer attends to the full context (Llama, Qwen, Mistral
without a sliding window, ...) through ``sdpa`` or ``eager`` attention;
:func:`supports_cached_decoding` tells.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from gem_trainer.decoding.prefix_cache import CachedPrefix, PrefixCache, common_prefix_length
from gem_trainer.model_calls import buffer_cache, cache_options, explicit_mask, takes_explicit_mask

#: Padded new tokens read per forward pass in phase 2.
PREFILL_TOKENS = 2048
#: Shorter shared prefixes are not worth a pass of their own in phase 1.
MIN_SHARED_TOKENS = 16
#: Decoding steps between two looks at whether every row has finished, in the device loop.
CHECK_EVERY = 8
#: Captured batch shapes round their rows up to a power of two and their columns up to a multiple of this.
COLUMN_BUCKET = 256
#: Captured batch shapes kept (each holds its key/value buffer); the least recently used go first.
MAX_CAPTURED = 4


def supports_cached_decoding(model: Any) -> bool:
    """Whether ``model`` is a decoder-only model whose every layer keeps a full key/value cache,
    computed with an attention that takes an explicit mask (``sdpa`` or ``eager``)."""
    return takes_explicit_mask(model)


class CachedDecoder:
    """Samples responses for tokenised prompts, keeping what it computed in ``cache``.

    ``device_loop`` chooses the decoding loop (None: on the device on CUDA, on the host
    otherwise); ``cuda_graphs`` captures the device loop's step as a CUDA graph (None: on CUDA).
    """

    def __init__(self, model: Any, cache: PrefixCache, *, stop_ids: set[int], pad_id: int,
                 device_loop: bool | None = None, cuda_graphs: bool | None = None):
        import torch

        self.model = model
        self.cache = cache
        self.stop_ids = stop_ids
        self.pad_id = pad_id
        parameter = next(model.parameters())
        self.device = parameter.device
        self.dtype = parameter.dtype
        on_cuda = self.device.type == "cuda"
        self.device_loop = on_cuda if device_loop is None else device_loop
        self.cuda_graphs = on_cuda if cuda_graphs is None else cuda_graphs
        if self.cuda_graphs and not (on_cuda and self.device_loop):
            raise ValueError("CUDA graphs capture the device loop of a model on a CUDA device.")
        self.stops = torch.tensor(sorted(stop_ids) or [-1], dtype=torch.long, device=self.device)
        self._captured: OrderedDict[tuple[Any, ...], tuple[_Batch, _DeviceSteps]] = OrderedDict()

    def sample(self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int, temperature: float,
               top_p: float, seeds: Sequence[int] | None = None) -> list[list[int]]:
        """One response per prompt: sampled token ids, ending with a stop token unless cut off at
        ``max_new_tokens``. ``temperature`` 0 is greedy. ``seeds`` (one per prompt) samples each
        prompt from a generator of its own, so its response does not depend on the rest of the
        batch; without them, the batch draws from torch's generator."""
        responses: list[list[int]] = [[] for _ in prompts]
        for indices, sampled in self.stream(prompts, max_new_tokens=max_new_tokens, temperature=temperature,
                                            top_p=top_p, seeds=seeds):
            for index, response in zip(indices, sampled):
                responses[index] = response
        return responses

    def stream(self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int, temperature: float,
               top_p: float, seeds: Sequence[int] | None = None) -> Iterator[tuple[list[int], list[list[int]]]]:
        """:meth:`sample`, handing responses over as ``(prompt indices, responses)`` as they are
        ready: the device loop hands over the rows that have finished at each look while the
        device decodes the others; the host loop hands over every row at the end."""
        ids = [np.asarray(prompt, dtype=np.int64) for prompt in prompts]
        if not ids:
            return iter(())
        if any(len(seq) == 0 for seq in ids):
            raise ValueError("Every prompt needs at least one token to continue from.")
        return _in_inference_mode(self._stream(ids, max_new_tokens, temperature, top_p, seeds))

    def _stream(self, ids: list[np.ndarray], max_new_tokens: int, temperature: float, top_p: float,
                seeds: Sequence[int] | None) -> Iterator[tuple[list[int], list[list[int]]]]:
        import torch

        self._cache_shared_prefixes([seq[:-1] for seq in ids])
        heads = self._read_prompts(ids)
        generators = None
        if seeds is not None and temperature > 0:
            generators = [torch.Generator(self.device).manual_seed(seed) for seed in seeds]
        if self.device_loop:
            yield from self._decode_on_device(ids, heads, max_new_tokens, temperature, top_p, generators)
        else:
            yield list(range(len(ids))), self._decode_on_host(ids, heads, max_new_tokens, temperature, top_p, generators)

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
        batch = self._batch(heads, new, extra_columns=0)
        return [CachedPrefix(seq, batch.row_kv(row, 0)) for row, seq in enumerate(full)]

    # ---- phase 3: decoding ------------------------------------------------------------------

    def _decode_on_host(self, ids: list[np.ndarray], heads: list[CachedPrefix], max_new_tokens: int,
                        temperature: float, top_p: float, generators: list[Any] | None) -> list[list[int]]:
        """Decode step by step, reading each step's tokens back; finished rows leave the batch
        once a quarter of it has finished."""
        import torch

        batch = self._batch(heads, [seq[-1:] for seq in ids], extra_columns=max_new_tokens)
        responses: list[list[int]] = [[] for _ in ids]
        rows = list(range(len(ids)))  # batch row -> prompt index
        done = [False] * len(rows)  # per batch row: finished but still in the batch
        for _ in range(max_new_tokens):
            tokens = self._pick(batch.logits, temperature, top_p, generators)
            for row, (index, token) in enumerate(zip(rows, tokens.tolist())):
                if done[row]:
                    continue
                responses[index].append(token)
                if token in self.stop_ids or len(responses[index]) == max_new_tokens:
                    done[row] = True
                    self._keep(ids[index], responses[index], batch.row_kv(row, len(responses[index]) - 1))
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

    def _decode_on_device(self, ids: list[np.ndarray], heads: list[CachedPrefix], max_new_tokens: int,
                          temperature: float, top_p: float, generators: list[Any] | None,
                          ) -> Iterator[tuple[list[int], list[list[int]]]]:
        """Decode with every row in the batch and the tokens on the device. Every
        :data:`CHECK_EVERY` steps the host reads which rows have finished, with their tokens, and
        hands those over after queueing the next steps, so that its work on them (and its
        caller's) overlaps the device's. Rows with generators of their own (``seeds``) decode
        uncaptured: a graph replays the default generator only."""
        new = [seq[-1:] for seq in ids]
        if self.cuda_graphs and generators is None:
            batch, steps = self._captured_batch(heads, max_new_tokens, temperature, top_p)
            batch.load(heads, new)
        else:
            batch = self._batch(heads, new, extra_columns=max_new_tokens)
            steps = _DeviceSteps(batch, max_new_tokens, temperature, top_p, capture=False, generators=generators)
        steps.start(len(ids))
        taken, open_rows, finished = 1, set(range(len(ids))), []
        while open_rows:
            for _ in range(min(CHECK_EVERY - taken % CHECK_EVERY, max_new_tokens - taken)):
                steps.run()  # queued: the device runs it while the host goes on
                taken += 1
            if finished:
                yield self._hand_over(ids, batch, finished)
            last = taken == max_new_tokens
            finished = steps.finished(open_rows, taken, self.stop_ids, last)
            open_rows -= {row for row, _ in finished}
        if finished:
            yield self._hand_over(ids, batch, finished)

    def _hand_over(self, ids: list[np.ndarray], batch: _Batch,
                   finished: list[tuple[int, list[int]]]) -> tuple[list[int], list[list[int]]]:
        """Finished rows' prompt indices and responses, each prompt and response cached."""
        for row, response in finished:
            self._keep(ids[row], response, batch.row_kv(row, len(response) - 1))
        return [row for row, _ in finished], [response for _, response in finished]

    def _captured_batch(self, heads: list[CachedPrefix], max_new_tokens: int, temperature: float,
                        top_p: float) -> tuple[_Batch, _DeviceSteps]:
        """A captured batch with room for these rows and columns: the smallest captured before
        that fits, or a new one with its rows rounded up to a power of two and its columns to a
        multiple of :data:`COLUMN_BUCKET`, which replaces those it covers. Rows past a batch's own
        cost little: a small model's decoding step takes about as long for 8 rows as for 64."""
        rows = len(heads)
        columns = max(len(head) for head in heads) + 1 + max_new_tokens
        settings = (max_new_tokens, temperature, top_p)
        fitting = [key for key in self._captured if key[2:] == settings and key[0] >= rows and key[1] >= columns]
        if fitting:
            key = min(fitting, key=lambda key: key[0] * key[1])
        else:
            key = (1 << (rows - 1).bit_length(), -(-columns // COLUMN_BUCKET) * COLUMN_BUCKET, *settings)
            for covered in [old for old in self._captured if old[2:] == settings and old[0] <= key[0] and old[1] <= key[1]]:
                del self._captured[covered]
            if len(self._captured) >= MAX_CAPTURED:
                self._captured.popitem(last=False)
            batch = _Batch.empty(self, key[0], key[1])
            try:
                self._captured[key] = (batch, _DeviceSteps(batch, max_new_tokens, temperature, top_p, capture=True))
            except RuntimeError as error:  # a forward pass that reads back or allocates what a graph cannot hold
                warnings.warn(f"Capturing a decoding step of {type(self.model).__name__} as a CUDA graph failed "
                              f"({error}); it decodes uncaptured from now on, step by step.", RuntimeWarning, stacklevel=2)
                self.cuda_graphs = False
                return batch, _DeviceSteps(batch, max_new_tokens, temperature, top_p, capture=False)
        self._captured.move_to_end(key)
        return self._captured[key]

    def _pick(self, logits: Any, temperature: float, top_p: float, generators: list[Any] | None) -> Any:
        return pick(logits, temperature, top_p, generators)

    def _batch(self, heads: list[CachedPrefix], new: list[np.ndarray], *, extra_columns: int) -> Any:
        """A batch of ``heads`` that reads ``new`` tokens, with room for ``extra_columns`` more."""
        return _Batch(self, heads, new, extra_columns=extra_columns)

    def _keep(self, prompt: np.ndarray, response: list[int], kv: Any) -> None:
        """Cache a prompt with its response but the last token (the one the model has not read)."""
        self.cache.add(CachedPrefix(np.concatenate([prompt, response[:-1]]).astype(np.int64), kv))


def _in_inference_mode(steps: Iterator[Any]) -> Iterator[Any]:
    """``steps`` run in torch's inference mode, which stays off for the caller between items."""
    import torch

    while True:
        with torch.inference_mode():
            item = next(steps, _END)
        if item is _END:
            return
        yield item


_END = object()


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


def pick(logits: Any, temperature: float, top_p: float, generators: list[Any] | None = None) -> Any:
    """A token per row of ``logits``: greedy at temperature 0, else sampled from the nucleus of
    probability ``top_p``, each row from its own generator when ``generators`` are given.

    A row's sample is the token whose probability over an exponential draw is largest, which is
    what ``torch.multinomial`` computes for one sample (the same draws, the same tokens), without
    its host-side checks: it runs inside a CUDA graph.
    """
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
        return (probs / torch.empty_like(probs).exponential_()).argmax(-1)
    return torch.stack([(row / torch.empty_like(row).exponential_(generator=g)).argmax()
                        for row, g in zip(probs, generators)])


class _Batch:
    """Rows of a batch in one key/value buffer of fixed shape (see the module docstring).

    ``kv``: layers x 2 x rows x kv_heads x columns x head_dim; ``valid``: rows x columns, the
    positions each row attends to; ``column`` (a one-element tensor): where the next decoded token
    goes; ``positions``: each row's next position id; ``logits``: each row's next-token logits.
    Rows past those loaded (a captured shape rounded up) attend to column 0 only and decode
    padding.
    """

    def __init__(self, decoder: CachedDecoder, heads: list[CachedPrefix], new: list[np.ndarray], *,
                 extra_columns: int):
        columns = max(len(head) for head in heads) + max(len(tokens) for tokens in new) + extra_columns
        self._allocate(decoder, len(heads), columns)
        self.load(heads, new)

    @classmethod
    def empty(cls, decoder: CachedDecoder, rows: int, columns: int) -> _Batch:
        """A batch of this shape with nothing loaded yet (see :meth:`load`)."""
        batch = cls.__new__(cls)
        batch._allocate(decoder, rows, columns)
        batch.valid[:, 0] = True  # the rows attend to something until loaded
        return batch

    def _allocate(self, decoder: CachedDecoder, rows: int, columns: int) -> None:
        import torch

        config = getattr(decoder.model.config, "text_config", None) or decoder.model.config
        heads = config.num_attention_heads
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        device = decoder.device
        self.decoder = decoder
        self.kv = torch.zeros(config.num_hidden_layers, 2, rows, kv_heads, columns, head_dim,
                              dtype=decoder.dtype, device=device)
        self.valid = torch.zeros(rows, columns, dtype=torch.bool, device=device)
        self.column = torch.zeros(1, dtype=torch.long, device=device)
        self.positions = torch.zeros(rows, dtype=torch.long, device=device)
        self.starts: list[tuple[int, int]] = []  # per loaded row: where its cached head and its new tokens start
        self.cached = 0  # the column where the new tokens' region starts (every head ends there)
        self.first_decoded = 0  # the column of the first decoded token
        self.logits: Any = None

    @property
    def rows(self) -> int:
        return self.kv.shape[2]

    def load(self, heads: list[CachedPrefix], new: list[np.ndarray]) -> None:
        """Lay out the cached ``heads`` and read their ``new`` tokens in one forward pass."""
        import torch

        cached = max(len(head) for head in heads)
        width = max(len(tokens) for tokens in new)
        device = self.kv.device
        input_ids = torch.full((self.rows, width), self.decoder.pad_id, dtype=torch.long)
        positions = torch.zeros(self.rows, width, dtype=torch.long)
        valid = torch.zeros(self.valid.shape, dtype=torch.bool)
        valid[len(heads):, 0] = True  # rows past the batch's own
        self.starts = []
        for row, (head, tokens) in enumerate(zip(heads, new)):
            if len(head):
                self.kv[:, :, row, :, cached - len(head):cached] = head.kv
            self.starts.append((cached - len(head), cached + width - len(tokens)))
            valid[row, cached - len(head):cached] = True
            valid[row, cached + width - len(tokens):cached + width] = True
            input_ids[row, width - len(tokens):] = torch.from_numpy(np.asarray(tokens, dtype=np.int64))
            positions[row, width - len(tokens):] = torch.arange(len(head), len(head) + len(tokens))
        self.valid.copy_(valid)
        self.cached, self.first_decoded = cached, cached + width
        self.column.fill_(cached + width)
        self.positions.copy_(positions[:, -1] + 1)
        reading = torch.arange(cached, cached + width, device=device)
        causal = torch.arange(self.valid.shape[1], device=device)[None, :] <= reading[:, None]  # width x columns
        mask = self.valid[:, None, None, :] & causal[None, None]
        mask |= ~mask.any(-1, keepdim=True)  # a padding query that sees nothing sees everything, not NaN
        self.logits = self.forward(input_ids.to(device), positions.to(device), reading, mask)

    def step(self, tokens: Any) -> None:
        """Read one more token per row, at the next column."""
        self.logits = self.forward_next(tokens)

    def forward_next(self, tokens: Any) -> Any:
        """Read ``tokens`` (one per row) at the next column and move on; the next-token logits.
        Allocates nothing that outlives the call and reads nothing back: capturable."""
        self.valid.index_fill_(1, self.column, True)
        logits = self.forward(tokens[:, None], self.positions[:, None], self.column, self.valid[:, None, None, :])
        self.column += 1
        self.positions += 1
        return logits

    def forward(self, input_ids: Any, positions: Any, columns: Any, mask: Any) -> Any:
        """Logits of the last token of each row, writing keys and values at ``columns``."""
        model = self.decoder.model
        out = model(input_ids=input_ids, attention_mask=explicit_mask(model, mask, self.kv.dtype), position_ids=positions,
                    **cache_options(model, buffer_cache(self.kv, columns), logits_to_keep=1))
        return out.logits[:, -1, :]

    def select(self, rows: list[int]) -> None:
        """Keep only these rows (the host loop's finished rows leave)."""
        import torch

        index = torch.tensor(rows, device=self.kv.device)
        self.kv = self.kv.index_select(2, index)
        self.valid = self.valid.index_select(0, index)
        self.positions = self.positions.index_select(0, index)
        self.starts = [self.starts[row] for row in rows]

    def row_kv(self, row: int, decoded: int) -> Any:
        """One row's keys and values without padding, its first ``decoded`` decoded tokens
        included: layers x 2 x kv_heads x tokens x head_dim. Two slices of the buffer: no index
        goes to the device, so nothing waits for the steps queued there."""
        import torch

        head, new = self.starts[row]
        kv = self.kv[:, :, row]
        return torch.cat([kv[:, :, :, head:self.cached], kv[:, :, :, new:self.first_decoded + decoded]], dim=3)


class _DeviceSteps:
    """The device loop's state and step: the tokens fed and sampled stay on the device.

    :meth:`start` samples each row's first token from the batch's logits; each :meth:`run` feeds
    the last tokens, samples the next ones and records them (captured as a CUDA graph when
    ``capture``, on a side stream after two warm-up steps, as PyTorch's documentation asks).
    """

    def __init__(self, batch: _Batch, max_new_tokens: int, temperature: float, top_p: float, *, capture: bool,
                 generators: list[Any] | None = None):
        import torch

        self.batch = batch
        self.temperature, self.top_p, self.generators = temperature, top_p, generators
        device = batch.kv.device
        self.last = torch.zeros(batch.rows, dtype=torch.long, device=device)
        self.sampled = torch.zeros(batch.rows, max_new_tokens, dtype=torch.long, device=device)
        self.count = torch.zeros(1, dtype=torch.long, device=device)  # tokens sampled per row so far
        self.done = torch.zeros(batch.rows, dtype=torch.bool, device=device)
        self.run = self._step
        if capture:
            from gem_trainer.decoding.cuda_graphs import capture as capture_graph

            self.run = capture_graph(self._step)

    def start(self, rows: int) -> None:
        """Sample the first token of each of the batch's first ``rows`` rows (the rest are done)."""
        first = pick(self.batch.logits, self.temperature, self.top_p, self.generators)
        self.last.copy_(first)
        self.sampled[:, 0] = first
        self.count.fill_(1)
        self.done.copy_(self._stopped(first))
        self.done[rows:] = True

    def _step(self) -> None:
        logits = self.batch.forward_next(self.last)
        tokens = pick(logits, self.temperature, self.top_p, self.generators)
        self.sampled.index_copy_(1, self.count, tokens[:, None])
        self.done |= self._stopped(tokens)
        self.last.copy_(tokens)
        self.count += 1

    def _stopped(self, tokens: Any) -> Any:
        """Which rows' ``tokens`` are stop tokens (compared one by one: ``torch.isin`` sorts and
        deduplicates larger inputs, reading their sizes back, which a CUDA graph cannot hold)."""
        return (tokens[:, None] == self.batch.decoder.stops[None, :]).any(-1)

    def finished(self, rows: set[int], taken: int, stop_ids: set[int], last: bool) -> list[tuple[int, list[int]]]:
        """Those of ``rows`` that have sampled a stop token (all of them when ``last``), each with
        its tokens up to the first stop. Reads the flags back, then, when some finished, the
        tokens: the device finishes the steps queued before first."""
        if last:
            done = sorted(rows)
        else:
            flags = self.done.tolist()
            done = [row for row in sorted(rows) if flags[row]]
        if not done:
            return []
        tokens = self.sampled[:, :taken].tolist()
        return [(row, tokens[row][:next((k + 1 for k, token in enumerate(tokens[row]) if token in stop_ids), taken)])
                for row in done]

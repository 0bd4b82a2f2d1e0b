"""The token-level REINFORCE loss over the model's own tokens.

Each turn of each episode is the prompt the model saw (the conversation so far, through the chat
template) and the response it sampled, which is the turn's action. Every response token carries
its turn's advantage; prompt tokens (instructions, environment observations) and padding carry
none::

    loss = - sum_turns sum_{tokens of the response} A_turn * log pi(token | context) / N

where ``N`` is the number of response tokens in the whole optimisation batch. Turns of one
episode share a sample when their prompts extend each other exactly (:class:`Sample`). Dividing by the
batch total, not by each micro-batch, makes gradient accumulation exact: the summed gradients of
the micro-batches equal the gradient of the batch in one piece.

The opening that a micro-batch's prompts share (the instructions every episode of an environment
starts with) is computed once, with its gradient, and every sample attends to its keys and
values: the same loss and gradient as computing it per sample, for a fraction of the work.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gem_trainer.decoding.prefix_cache import common_prefix_length
from gem_trainer.model_calls import cache_options, explicit_mask, forward_parameters, recording_cache

#: A shorter common opening is computed with each sample instead of once.
MIN_SHARED_TOKENS = 16


@dataclass
class Sample:
    """A prompt, then what followed it: the model's responses, which train with their turn's
    advantage, and between them the environment's observations (``mask`` 0), which do not.

    One turn is a prompt and a response. The turns of an episode join into one sample when each
    prompt is exactly the previous sample's tokens plus the new observation (see
    :meth:`extend`): the model then sees the very same context for every response, and the shared
    history is computed once instead of once per turn.
    """

    prompt_ids: list[int]
    completion_ids: list[int]
    mask: list[int]  # per completion token: 1 on the model's own tokens
    advantages: list[float]  # per completion token (0 where mask is 0)
    #: A vision-language model's image inputs for the prompt's images (a sample of its own).
    vision: dict[str, Any] | None = None

    @classmethod
    def turn(cls, prompt_ids: list[int], response_ids: list[int], advantage: float, *,
             vision: dict[str, Any] | None = None) -> Sample:
        return cls(list(prompt_ids), list(response_ids), [1] * len(response_ids),
                   [float(advantage)] * len(response_ids), vision)

    @property
    def num_model_tokens(self) -> int:
        return sum(self.mask)

    def extend(self, prompt_ids: list[int], response_ids: list[int], advantage: float) -> bool:
        """Append a later turn when ``prompt_ids`` continues this sample's tokens exactly; returns
        False (and changes nothing) otherwise."""
        if self.vision is not None:
            return False
        length = len(self.prompt_ids) + len(self.completion_ids)
        if len(prompt_ids) < length or prompt_ids[:len(self.prompt_ids)] != self.prompt_ids \
                or prompt_ids[len(self.prompt_ids):length] != self.completion_ids:
            return False
        observation = prompt_ids[length:]
        self.completion_ids += observation + list(response_ids)
        self.mask += [0] * len(observation) + [1] * len(response_ids)
        self.advantages += [0.0] * len(observation) + [float(advantage)] * len(response_ids)
        return True


#: Longest packed row: a row's attention reads every token of it (the mask keeps its samples
#: apart), so longer rows spend more on attention for the same tokens.
ROW_TOKENS = 256


@dataclass
class PackedBatch:
    """Samples laid end to end in rows, ``[sample | sample | ... | padding]``, after the
    ``shared_ids`` that every prompt starts with (computed once; none when empty).

    Each token reads the shared opening and the tokens of its own sample before it, and its
    position id counts from the start of the opening, so every sample is computed as it would be
    alone, and no token is spent on padding between samples. ``completion_ids``, ``mask`` and
    ``advantages`` hold one sample per row, its completion padded to the longest;
    ``rows`` and ``columns`` say where each completion token sits in the packed layout.
    """

    input_ids: Any  # long, R x L
    position_ids: Any  # long, R x L; from the start of the opening, per sample
    #: R x 1 x L x (S + L) bool (which tokens each token reads) when rows hold several samples;
    #: R x (S + L), 1 on real tokens, when each row holds one (transformers adds the causal part)
    attention_mask: Any
    completion_ids: Any  # long, N x C
    mask: Any  # float, N x C: 1 on the model's own tokens
    advantages: Any  # float, N x C
    rows: Any  # long, N x C: the packed row of each completion token
    columns: Any  # long, N x C: its column
    vision: dict[str, Any] | None = None  # image inputs of a one-sample batch
    shared_ids: Any = None  # long, 1 x S: the opening of every prompt, or None

    @property
    def num_tokens(self) -> int:
        return int(self.mask.sum().item())


def shared_prefix_length(samples: Sequence[Sample]) -> int:
    """How many leading prompt tokens all ``samples`` share, leaving each at least one prompt
    token of its own; 0 when that is under :data:`MIN_SHARED_TOKENS`, for a single sample, or
    with images."""
    if len(samples) < 2 or any(s.vision is not None for s in samples):
        return 0
    first = np.asarray(samples[0].prompt_ids)
    shared = min(len(s.prompt_ids) for s in samples) - 1
    for sample in samples[1:]:
        shared = min(shared, common_prefix_length(first, np.asarray(sample.prompt_ids)))
    return shared if shared >= MIN_SHARED_TOKENS else 0


def pack(rows: Sequence[Sequence[Sample]], pad_id: int, device: Any = "cpu") -> PackedBatch:
    """Lay out ``rows`` of samples (as :func:`micro_batches` yields them; ``[[s] for s in
    samples]`` for one sample per row) as one :class:`PackedBatch`, their shared opening apart."""
    import torch

    samples = [sample for row in rows for sample in row]
    if any(s.vision is not None for s in samples) and len(samples) > 1:
        raise ValueError("A sample with images must be packed alone (see micro_batches).")
    shared = shared_prefix_length(samples)
    width = max(sum(len(s.prompt_ids) + len(s.completion_ids) - shared for s in row) for row in rows)
    completion_len = max(max(len(s.completion_ids) for s in samples), 1)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    position_ids = torch.zeros((len(rows), width), dtype=torch.long)
    segment = -1 - torch.arange(width).expand(len(rows), width).clone()  # padding: a segment per token
    where = torch.zeros((2, len(samples), completion_len), dtype=torch.long)
    mask = torch.zeros((len(samples), completion_len), dtype=torch.float32)
    advantages = torch.zeros((len(samples), completion_len), dtype=torch.float32)
    completion_ids = torch.full((len(samples), completion_len), pad_id, dtype=torch.long)
    index = 0
    for r, row in enumerate(rows):
        column = 0
        for s in row:
            ids = s.prompt_ids[shared:] + s.completion_ids
            end = column + len(ids)
            input_ids[r, column:end] = torch.tensor(ids, dtype=torch.long)
            position_ids[r, column:end] = torch.arange(shared, shared + len(ids))
            segment[r, column:end] = index
            first = end - len(s.completion_ids)
            where[0, index, :len(s.completion_ids)] = r
            where[1, index, :len(s.completion_ids)] = torch.arange(first, end)
            completion_ids[index, :len(s.completion_ids)] = torch.tensor(s.completion_ids, dtype=torch.long)
            mask[index, :len(s.mask)] = torch.tensor(s.mask, dtype=torch.float32)
            advantages[index, :len(s.advantages)] = torch.tensor(s.advantages, dtype=torch.float32)
            column, index = end, index + 1
    if all(len(row) == 1 for row in rows):
        attention = (segment >= 0).long()
        attention = torch.cat([torch.ones((len(rows), shared), dtype=torch.long), attention], dim=1)
    else:
        before = torch.arange(width)[None, :] <= torch.arange(width)[:, None]  # key <= query
        attention = (segment[:, :, None] == segment[:, None, :]) & before
        attention = torch.cat([torch.ones((len(rows), width, shared), dtype=torch.bool), attention], dim=2)[:, None]
    vision = samples[0].vision
    shared_ids = torch.tensor([samples[0].prompt_ids[:shared]], dtype=torch.long).to(device) if shared else None
    return PackedBatch(
        input_ids.to(device), position_ids.to(device), attention.to(device), completion_ids.to(device),
        mask.to(device), advantages.to(device), where[0].to(device), where[1].to(device),
        None if vision is None else {key: value.to(device) for key, value in vision.items()}, shared_ids,
    )


def completion_logprobs(model: Any, batch: PackedBatch) -> Any:
    """Log-probabilities (float32, batch x C) of the model's own completion tokens (``mask`` 1)
    under ``model``; 0 at the environment's tokens.

    Only those tokens' logits are computed when the model's logits are its output layer applied
    to its decoder's last hidden state (checked once per model, see :func:`_decoder_and_head`):
    in a multi-turn sample most completion tokens are observations, whose logits over the whole
    vocabulary the loss never reads.
    """
    import torch

    split = None if batch.vision is not None else _decoder_and_head(model)
    network = model if split is None else split[0]
    samples, tokens = batch.mask.nonzero(as_tuple=True)
    rows, before = batch.rows[samples, tokens], batch.columns[samples, tokens] - 1  # the token that predicts each
    width = batch.input_ids.shape[1]
    kwargs: dict[str, Any] = {"use_cache": False}
    attention_mask = batch.attention_mask
    if batch.vision is not None:  # one unpadded sample: the model places its image tokens itself
        kwargs.update(batch.vision)
    else:
        kwargs["position_ids"] = batch.position_ids
    keep = None
    if split is None and "logits_to_keep" in forward_parameters(model):
        keep = width - int(before.min())  # logits from the first predicting token on
        kwargs["logits_to_keep"] = keep
    if batch.shared_ids is not None:  # computed once; its keys and values serve every row
        opening = recording_cache()
        network(input_ids=batch.shared_ids, **cache_options(network, opening, logits_to_keep=1))
        count = batch.input_ids.shape[0]
        cache = recording_cache([(keys.expand(count, -1, -1, -1), values.expand(count, -1, -1, -1))
                                 for keys, values in (opening.kv[layer] for layer in range(len(opening.kv)))])
        kwargs.update(cache_options(network, cache, logits_to_keep=keep))
    if attention_mask.dim() == 4:
        attention_mask = explicit_mask(model, attention_mask, next(network.parameters()).dtype)
    out = network(input_ids=batch.input_ids, attention_mask=attention_mask, **kwargs)
    if split is None:
        logits = out.logits[rows, before - (width - (keep or width))]
    else:  # the state before each of the model's tokens, through the output layer
        logits = split[1](out.last_hidden_state[rows, before])
    picked = -torch.nn.functional.cross_entropy(logits.float(), batch.completion_ids[samples, tokens], reduction="none")
    return torch.zeros(batch.completion_ids.shape, dtype=picked.dtype, device=picked.device).index_put((samples, tokens), picked)


_SPLIT_MODELS: weakref.WeakKeyDictionary[Any, tuple[Any, Any] | None] = weakref.WeakKeyDictionary()


def _decoder_and_head(model: Any) -> tuple[Any, Any] | None:
    """The decoder and output layer of ``model`` when its logits are exactly the output layer
    applied to the decoder's last hidden state, checked once per model on a few tokens (a model
    that scales or caps its logits fails the check and is called whole)."""
    import torch

    if model in _SPLIT_MODELS:
        return _SPLIT_MODELS[model]
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    split = None
    try:
        decoder, head = base.get_decoder(), base.get_output_embeddings()
    except (AttributeError, NotImplementedError):
        decoder = head = None
    if decoder is not None and head is not None and decoder is not base:
        ids = torch.arange(3, 7, device=head.weight.device)[None] % head.weight.shape[0]
        with torch.no_grad():
            whole = model(input_ids=ids, use_cache=False).logits
            parts = head(decoder(input_ids=ids, use_cache=False).last_hidden_state)
        if whole.shape == parts.shape and torch.allclose(whole.float(), parts.float(), rtol=1e-4, atol=1e-5):
            split = (decoder, head)
    _SPLIT_MODELS[model] = split
    return split


def reinforce_loss(model: Any, batch: PackedBatch, total_tokens: int) -> tuple[Any, Any]:
    """This micro-batch's share of the loss (see the module docstring) and its log-probs."""
    logprobs = completion_logprobs(model, batch)
    weighted = logprobs * batch.advantages * batch.mask
    return -weighted.sum() / max(total_tokens, 1), logprobs.detach()


def micro_batches(samples: Sequence[Sample], max_tokens: int, *, packed: bool = True) -> Iterator[list[list[Sample]]]:
    """The samples in micro-batches for :func:`pack`, as rows of samples, each micro-batch about
    ``max_tokens`` tokens at most (rows x its longest row), not counting the opening all samples
    share (computed once per micro-batch). A sample longer than that, or one with images, forms a
    micro-batch alone.

    With ``packed``, a micro-batch's samples, the longest first, each go to its shortest row,
    with as few rows as keep them near :data:`ROW_TOKENS` (or ``max_tokens``) tokens each, so the
    rows come out of nearly equal length; else (a model that takes no mask of ours, see
    :func:`~gem_trainer.model_calls.takes_explicit_mask`) each sample is a row of its own, and
    samples of similar length share a micro-batch. Either way little is spent on padding."""
    for sample in samples:
        if sample.vision is not None:
            yield [[sample]]
    text = [s for s in samples if s.vision is None]
    shared = shared_prefix_length(text)
    own = {id(s): len(s.prompt_ids) + len(s.completion_ids) - shared for s in text}
    capacity = min(max_tokens, ROW_TOKENS)
    group: list[Sample] = []
    longest = total = 0  # the group's first (longest) sample, and its tokens
    for sample in sorted(text, key=lambda s: -own[id(s)]):
        length = own[id(sample)]
        if group and (total + length if packed else (len(group) + 1) * longest) > max_tokens:
            yield _rows(group, own, capacity) if packed else [[s] for s in group]
            group = []
        if not group:
            longest = total = 0
        group.append(sample)
        longest, total = max(longest, length), total + length
    if group:
        yield _rows(group, own, capacity) if packed else [[s] for s in group]


def _rows(samples: list[Sample], own: dict[int, int], capacity: int) -> list[list[Sample]]:
    """``samples`` (longest first) in as many rows as ``capacity`` tokens each need, each sample
    going to the row that is shortest so far."""
    import heapq

    count = max(1, -(-sum(own[id(s)] for s in samples) // capacity))
    rows: list[list[Sample]] = [[] for _ in range(count)]
    heap = [(0, row) for row in range(count)]
    for sample in samples:
        length, row = heapq.heappop(heap)
        rows[row].append(sample)
        heapq.heappush(heap, (length + own[id(sample)], row))
    return [row for row in rows if row]

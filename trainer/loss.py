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

from gem_trainer.model_calls import cache_options, forward_parameters, recording_cache
from gem_trainer.prefix_cache import common_prefix_length

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


@dataclass
class PackedBatch:
    """Samples laid out as ``[left padding | prompt | completion | right padding]``, after the
    ``shared_ids`` that every prompt starts with (computed once; none when empty).

    All completions start in the same column, so the logits that predict them are the last
    ``completion_ids.shape[1] + 1`` positions, the only ones the loss computes.
    """

    input_ids: Any  # long, batch x (P + C)
    attention_mask: Any  # long, batch x (P + C)
    position_ids: Any  # long, batch x (P + C); counts only real tokens (the shared ones too), as generation does
    completion_ids: Any  # long, batch x C
    mask: Any  # float, batch x C: 1 on the model's own tokens
    advantages: Any  # float, batch x C
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


def pack(samples: Sequence[Sample], pad_id: int, device: Any = "cpu") -> PackedBatch:
    """Pad ``samples`` into one :class:`PackedBatch`, their shared opening apart."""
    import torch

    shared = shared_prefix_length(samples)
    prompt_len = max(len(s.prompt_ids) for s in samples) - shared
    completion_len = max(max(len(s.completion_ids) for s in samples), 1)
    n = len(samples)
    input_ids = torch.full((n, prompt_len + completion_len), pad_id, dtype=torch.long)
    attention = torch.zeros((n, prompt_len + completion_len), dtype=torch.long)
    mask = torch.zeros((n, completion_len), dtype=torch.float32)
    advantages = torch.zeros((n, completion_len), dtype=torch.float32)
    for row, s in enumerate(samples):
        start = prompt_len - (len(s.prompt_ids) - shared)
        end = prompt_len + len(s.completion_ids)
        input_ids[row, start:end] = torch.tensor(s.prompt_ids[shared:] + s.completion_ids, dtype=torch.long)
        attention[row, start:end] = 1
        mask[row, :len(s.mask)] = torch.tensor(s.mask, dtype=torch.float32)
        advantages[row, :len(s.advantages)] = torch.tensor(s.advantages, dtype=torch.float32)
    position_ids = (attention.cumsum(-1) - 1).clamp(min=0) + shared
    vision = samples[0].vision if len(samples) == 1 else None
    if any(s.vision is not None for s in samples) and vision is None:
        raise ValueError("A sample with images must be packed alone (see micro_batches).")
    shared_ids = torch.tensor([samples[0].prompt_ids[:shared]], dtype=torch.long).to(device) if shared else None
    return PackedBatch(
        input_ids.to(device), attention.to(device), position_ids.to(device),
        input_ids[:, prompt_len:].to(device), mask.to(device), advantages.to(device),
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
    completion_len = batch.completion_ids.shape[1]
    keep = completion_len + 1 if split is None and "logits_to_keep" in forward_parameters(model) else None
    kwargs: dict[str, Any] = {"use_cache": False}
    attention_mask = batch.attention_mask
    if batch.vision is not None:  # one unpadded sample: the model places its image tokens itself
        kwargs.update(batch.vision)
    else:
        kwargs["position_ids"] = batch.position_ids
    if keep is not None:
        kwargs["logits_to_keep"] = keep
    if batch.shared_ids is not None:  # computed once; its keys and values serve every row
        opening = recording_cache()
        network(input_ids=batch.shared_ids, **cache_options(network, opening, logits_to_keep=1))
        rows = batch.input_ids.shape[0]
        cache = recording_cache([(keys.expand(rows, -1, -1, -1), values.expand(rows, -1, -1, -1))
                                 for keys, values in (opening.kv[layer] for layer in range(len(opening.kv)))])
        kwargs.update(cache_options(network, cache, logits_to_keep=keep))
        attention_mask = torch.cat([torch.ones_like(batch.shared_ids).expand(rows, -1), attention_mask], dim=1)
    out = network(input_ids=batch.input_ids, attention_mask=attention_mask, **kwargs)
    rows, columns = batch.mask.nonzero(as_tuple=True)
    if split is None:
        logits = out.logits[:, -(completion_len + 1):-1, :][rows, columns]
    else:  # the state before each of the model's tokens, through the output layer
        before = batch.input_ids.shape[1] - completion_len - 1
        logits = split[1](out.last_hidden_state[rows, before + columns])
    picked = -torch.nn.functional.cross_entropy(logits.float(), batch.completion_ids[rows, columns], reduction="none")
    return torch.zeros(batch.completion_ids.shape, dtype=picked.dtype, device=picked.device).index_put((rows, columns), picked)


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


def micro_batches(samples: Sequence[Sample], max_tokens: int) -> Iterator[list[Sample]]:
    """Groups of samples whose padded layout (:func:`pack`) holds at most ``max_tokens`` tokens,
    not counting the opening all samples share (computed once per group); a sample longer than
    that, or one with images, forms a group alone. Samples are sorted by length first, so each
    group wastes little padding."""
    for sample in samples:
        if sample.vision is not None:
            yield [sample]
    text = [s for s in samples if s.vision is None]
    shared = shared_prefix_length(text)
    order = sorted(text, key=lambda s: (len(s.prompt_ids) + len(s.completion_ids)))
    group: list[Sample] = []
    prompt_len = completion_len = 0
    for sample in order:
        p = max(prompt_len, len(sample.prompt_ids) - shared)
        c = max(completion_len, len(sample.completion_ids))
        if group and (len(group) + 1) * (p + c) > max_tokens:
            yield group
            group, p, c = [], len(sample.prompt_ids) - shared, len(sample.completion_ids)
        group.append(sample)
        prompt_len, completion_len = p, c
    if group:
        yield group

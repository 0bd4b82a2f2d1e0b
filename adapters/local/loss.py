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
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any


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
    """Samples laid out as ``[left padding | prompt | completion | right padding]``.

    All completions start in the same column, so the logits that predict them are the last
    ``completion_ids.shape[1] + 1`` positions, the only ones the loss computes.
    """

    input_ids: Any  # long, batch x (P + C)
    attention_mask: Any  # long, batch x (P + C)
    position_ids: Any  # long, batch x (P + C); counts only real tokens, as generation does
    completion_ids: Any  # long, batch x C
    mask: Any  # float, batch x C: 1 on the model's own tokens
    advantages: Any  # float, batch x C
    vision: dict[str, Any] | None = None  # image inputs of a one-sample batch

    @property
    def num_tokens(self) -> int:
        return int(self.mask.sum().item())


def pack(samples: Sequence[Sample], pad_id: int, device: Any = "cpu") -> PackedBatch:
    """Pad ``samples`` into one :class:`PackedBatch`."""
    import torch

    prompt_len = max(len(s.prompt_ids) for s in samples)
    completion_len = max(max(len(s.completion_ids) for s in samples), 1)
    n = len(samples)
    input_ids = torch.full((n, prompt_len + completion_len), pad_id, dtype=torch.long)
    attention = torch.zeros((n, prompt_len + completion_len), dtype=torch.long)
    mask = torch.zeros((n, completion_len), dtype=torch.float32)
    advantages = torch.zeros((n, completion_len), dtype=torch.float32)
    for row, s in enumerate(samples):
        start = prompt_len - len(s.prompt_ids)
        end = prompt_len + len(s.completion_ids)
        input_ids[row, start:end] = torch.tensor(s.prompt_ids + s.completion_ids, dtype=torch.long)
        attention[row, start:end] = 1
        mask[row, :len(s.mask)] = torch.tensor(s.mask, dtype=torch.float32)
        advantages[row, :len(s.advantages)] = torch.tensor(s.advantages, dtype=torch.float32)
    position_ids = (attention.cumsum(-1) - 1).clamp(min=0)
    vision = samples[0].vision if len(samples) == 1 else None
    if any(s.vision is not None for s in samples) and vision is None:
        raise ValueError("A sample with images must be packed alone (see micro_batches).")
    return PackedBatch(
        input_ids.to(device), attention.to(device), position_ids.to(device),
        input_ids[:, prompt_len:].to(device), mask.to(device), advantages.to(device),
        None if vision is None else {key: value.to(device) for key, value in vision.items()},
    )


def completion_logprobs(model: Any, batch: PackedBatch) -> Any:
    """Log-probabilities (float32, batch x C) of the completion tokens under ``model``."""
    import torch

    completion_len = batch.completion_ids.shape[1]
    kwargs = {}
    if _accepts_logits_to_keep(model):
        kwargs["logits_to_keep"] = completion_len + 1
    if batch.vision is not None:  # one unpadded sample: the model places its image tokens itself
        kwargs.update(batch.vision)
    else:
        kwargs["position_ids"] = batch.position_ids
    out = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False, **kwargs)
    logits = out.logits[:, -(completion_len + 1):-1, :].float()
    nll = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), batch.completion_ids.reshape(-1), reduction="none",
    )
    return -nll.view(batch.completion_ids.shape)


def reinforce_loss(model: Any, batch: PackedBatch, total_tokens: int) -> tuple[Any, Any]:
    """This micro-batch's share of the loss (see the module docstring) and its log-probs."""
    logprobs = completion_logprobs(model, batch)
    weighted = logprobs * batch.advantages * batch.mask
    return -weighted.sum() / max(total_tokens, 1), logprobs.detach()


def micro_batches(samples: Sequence[Sample], max_tokens: int) -> Iterator[list[Sample]]:
    """Groups of samples whose padded layout (:func:`pack`) holds at most ``max_tokens`` tokens;
    a sample longer than that, or one with images, forms a group alone. Samples are sorted by
    length first, so each group wastes little padding."""
    for sample in samples:
        if sample.vision is not None:
            yield [sample]
    order = sorted((s for s in samples if s.vision is None), key=lambda s: (len(s.prompt_ids) + len(s.completion_ids)))
    group: list[Sample] = []
    prompt_len = completion_len = 0
    for sample in order:
        p = max(prompt_len, len(sample.prompt_ids))
        c = max(completion_len, len(sample.completion_ids))
        if group and (len(group) + 1) * (p + c) > max_tokens:
            yield group
            group, p, c = [], len(sample.prompt_ids), len(sample.completion_ids)
        group.append(sample)
        prompt_len, completion_len = p, c
    if group:
        yield group


def _accepts_logits_to_keep(model: Any) -> bool:
    try:
        forward = model.get_base_model().forward if hasattr(model, "get_base_model") else model.forward
        return "logits_to_keep" in inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return False

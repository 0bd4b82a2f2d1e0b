"""The token-level REINFORCE loss over the model's own tokens.

Each turn of each episode is one training sample: the prompt the model saw (the conversation so
far, through the chat template) and the response it sampled, which is the turn's action. Every
response token carries its turn's advantage; prompt tokens (instructions, environment
observations, earlier turns) and padding carry none::

    loss = - sum_turns sum_{tokens of the response} A_turn * log pi(token | context) / N

where ``N`` is the number of response tokens in the whole optimisation batch. Dividing by the
batch total, not by each micro-batch, makes gradient accumulation exact: the summed gradients of
the micro-batches equal the gradient of the batch in one piece.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class TurnSample:
    """One turn as training data: token ids of the prompt and of the sampled response."""

    prompt_ids: list[int]
    response_ids: list[int]
    advantage: float


@dataclass
class PackedBatch:
    """Turns laid out as ``[left padding | prompt | response | right padding]``.

    All responses start in the same column, so the logits that predict them are the last
    ``response_mask.shape[1] + 1`` positions, the only ones the loss computes.
    """

    input_ids: Any  # long, batch x (P + R)
    attention_mask: Any  # long, batch x (P + R)
    position_ids: Any  # long, batch x (P + R); counts only real tokens, as generation does
    response_ids: Any  # long, batch x R
    response_mask: Any  # float, batch x R: 1 on the model's own tokens
    advantages: Any  # float, batch

    @property
    def num_tokens(self) -> int:
        return int(self.response_mask.sum().item())


def pack(samples: Sequence[TurnSample], pad_id: int, device: Any = "cpu") -> PackedBatch:
    """Pad ``samples`` into one :class:`PackedBatch` (at least one response token each)."""
    import torch

    prompt_len = max(len(s.prompt_ids) for s in samples)
    response_len = max(max(len(s.response_ids) for s in samples), 1)
    n = len(samples)
    input_ids = torch.full((n, prompt_len + response_len), pad_id, dtype=torch.long)
    attention = torch.zeros((n, prompt_len + response_len), dtype=torch.long)
    for row, s in enumerate(samples):
        start = prompt_len - len(s.prompt_ids)
        end = prompt_len + len(s.response_ids)
        input_ids[row, start:prompt_len] = torch.tensor(s.prompt_ids, dtype=torch.long)
        input_ids[row, prompt_len:end] = torch.tensor(s.response_ids, dtype=torch.long)
        attention[row, start:end] = 1
    position_ids = (attention.cumsum(-1) - 1).clamp(min=0)
    response_mask = attention[:, prompt_len:].to(torch.float32)
    advantages = torch.tensor([s.advantage for s in samples], dtype=torch.float32)
    return PackedBatch(
        input_ids.to(device), attention.to(device), position_ids.to(device),
        input_ids[:, prompt_len:].to(device), response_mask.to(device), advantages.to(device),
    )


def response_logprobs(model: Any, batch: PackedBatch) -> Any:
    """Log-probabilities (float32, batch x R) of the response tokens under ``model``."""
    import torch

    response_len = batch.response_ids.shape[1]
    kwargs = {}
    if _accepts_logits_to_keep(model):
        kwargs["logits_to_keep"] = response_len + 1
    out = model(
        input_ids=batch.input_ids, attention_mask=batch.attention_mask,
        position_ids=batch.position_ids, use_cache=False, **kwargs,
    )
    logits = out.logits[:, -(response_len + 1):-1, :].float()
    nll = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), batch.response_ids.reshape(-1), reduction="none",
    )
    return -nll.view(batch.response_ids.shape)


def reinforce_loss(model: Any, batch: PackedBatch, total_tokens: int) -> tuple[Any, Any]:
    """This micro-batch's share of the loss (see the module docstring) and its log-probs."""
    logprobs = response_logprobs(model, batch)
    weighted = logprobs * batch.advantages[:, None] * batch.response_mask
    return -weighted.sum() / max(total_tokens, 1), logprobs.detach()


def micro_batches(samples: Sequence[TurnSample], max_tokens: int) -> Iterator[list[TurnSample]]:
    """Groups of samples whose padded layout (:func:`pack`) holds at most ``max_tokens`` tokens;
    a sample longer than that forms a group alone. Samples are sorted by length first, so each
    group wastes little padding."""
    order = sorted(samples, key=lambda s: (len(s.prompt_ids) + len(s.response_ids)))
    group: list[TurnSample] = []
    prompt_len = response_len = 0
    for sample in order:
        p = max(prompt_len, len(sample.prompt_ids))
        r = max(response_len, len(sample.response_ids))
        if group and (len(group) + 1) * (p + r) > max_tokens:
            yield group
            group, p, r = [], len(sample.prompt_ids), len(sample.response_ids)
        group.append(sample)
        prompt_len, response_len = p, r
    if group:
        yield group


def _accepts_logits_to_keep(model: Any) -> bool:
    try:
        forward = model.get_base_model().forward if hasattr(model, "get_base_model") else model.forward
        return "logits_to_keep" in inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return False

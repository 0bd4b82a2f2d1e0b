"""Where turns sit in a response: a turn is a maximal run of 1s in ``response_mask`` (the model's
tokens), and its reward goes on the run's last token.

This is the layout every adapter writes and GEM's estimators read back inside the training library.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gem_core.errors import GemError


def turn_end_positions(response_mask: Any) -> list[int]:
    """Positions of the last token of every turn in one response, left to right."""
    import torch

    mask = torch.as_tensor(response_mask).bool().flatten()
    ends = mask.clone()
    ends[:-1] &= ~mask[1:]
    return ends.nonzero().flatten().tolist()


def rewards_on_turn_ends(response_mask: Any, turn_rewards: Sequence[float]) -> Any:
    """A float32 tensor shaped like ``response_mask`` holding each turn's reward on that turn's
    last token, 0 elsewhere."""
    import torch

    mask = torch.as_tensor(response_mask)
    positions = turn_end_positions(mask)
    if len(positions) != len(turn_rewards):
        raise GemError(
            f"The response holds {len(positions)} model turn(s) but {len(turn_rewards)} reward(s): "
            "every turn needs at least one model token, with environment tokens between turns."
        )
    scores = torch.zeros(mask.shape, dtype=torch.float32)
    scores[positions] = torch.tensor(list(turn_rewards), dtype=torch.float32)
    return scores

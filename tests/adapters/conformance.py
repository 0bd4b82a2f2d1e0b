"""The conformance batch: one multi-turn batch that every adapter stage feeds through its
library's own advantage path, checked per token against gem_core's estimators.

Three episodes with per-turn rewards ``[0, 1]``, ``[0, 0, 0.5]`` and ``[1]`` at ``gamma = 0.9``
have the discounted returns ``[0.9, 1.0]``, ``[0.405, 0.45, 0.5]`` and ``[1.0]``; ReBN normalises
those six returns together (population std, eps 1e-6). ``GROUPED`` is a two-episode group (two
episodes from one start) for GRPO. The literal expectations below are checked against gem_core in
the core stage (tests/estimators/test_conformance.py), so an adapter that matches them matches
gem_core.

In token rows each turn has a few model tokens (mask 1) followed by environment tokens (mask 0);
each turn's reward sits on its last model token, as every adapter writes it. Only this module's
token helpers need torch; everything else is plain Python and numpy.

The batch *plus failed episodes* (``MIXED``): two episodes the infrastructure broke, placed among
the others, with rewards that would move every statistic if they counted. An adapter passes when
the valid episodes get exactly ``REBN`` (the statistics are taken without the failed ones), the
failed ones get 0, and the library's own loss gives the failed episodes' tokens zero weight.
``GROUPED_MIXED`` adds a failed member to the GRPO group: the group keeps its two valid members.
"""

from __future__ import annotations

from typing import Any

import numpy as np

GAMMA = 0.9
EPISODES = ([0.0, 1.0], [0.0, 0.0, 0.5], [1.0])
RETURNS = ([0.9, 1.0], [0.405, 0.45, 0.5], [1.0])
#: gem_core's ReBN of EPISODES at GAMMA, per turn.
REBN = ([0.730895829, 1.1138980102], [-1.1649649677, -0.9926139861, -0.8011128956], [1.1138980102])

GROUPED = ([0.0, 1.0], [0.0, 0.0, 0.5])
GROUP_IDS = ("g", "g")
#: gem_core's GRPO of GROUPED in one group at GAMMA: each episode's advantage on all its turns.
GRPO = ([0.9999959596, 0.9999959596], [-0.9999959596, -0.9999959596, -0.9999959596])

#: Per episode, per turn: (model tokens, environment tokens after the turn).
LAYOUT = ([(3, 2), (2, 0)], [(2, 1), (1, 2), (3, 0)], [(4, 0)])
TOLERANCE = 1e-5

#: Failed episodes, their layouts, and the batch with them among its own episodes.
FAILED = ([5.0, -3.0], [10.0])
FAILED_LAYOUT = ([(2, 1), (3, 0)], [(5, 0)])
MIXED = (EPISODES[0], FAILED[0], EPISODES[1], EPISODES[2], FAILED[1])
MIXED_LAYOUT = (LAYOUT[0], FAILED_LAYOUT[0], LAYOUT[1], LAYOUT[2], FAILED_LAYOUT[1])
MIXED_VALID = (True, False, True, True, False)
#: What every turn of MIXED gets: REBN on the valid episodes, 0 on the failed ones.
MIXED_REBN = (REBN[0], [0.0, 0.0], REBN[1], REBN[2], [0.0])
GROUPED_MIXED = (GROUPED[0], FAILED[0], GROUPED[1])
GROUPED_MIXED_LAYOUT = (LAYOUT[0], FAILED_LAYOUT[0], LAYOUT[1])
GROUPED_MIXED_VALID = (True, False, True)
GROUPED_MIXED_IDS = ("g", "g", "g")
GROUPED_MIXED_GRPO = (GRPO[0], [0.0, 0.0], GRPO[1])


def flat(values: Any) -> np.ndarray:
    """Per-episode sequences as one flat float64 array, episode after episode."""
    return np.concatenate([np.asarray(v, dtype=np.float64) for v in values])


def turn_spans(layout: Any = LAYOUT) -> list[list[tuple[int, int]]]:
    """Per episode, the [start, end) token span of every turn's model tokens."""
    spans = []
    for turns in layout:
        position, row = 0, []
        for model_tokens, env_tokens in turns:
            row.append((position, position + model_tokens))
            position += model_tokens + env_tokens
        spans.append(row)
    return spans


def row_width(layout: Any = LAYOUT) -> int:
    return max(sum(m + e for m, e in turns) for turns in layout)


def token_rows(episodes: Any = EPISODES, layout: Any = LAYOUT, *, width: int | None = None,
               failed_unmasked: Any = None) -> tuple[Any, Any]:
    """``(token_level_rewards, response_mask)`` as torch tensors (rows x width, right-padded):
    each turn's reward on its last model token, mask 1 on model tokens. With ``failed_unmasked``
    (one flag per episode, False for a failed one), a failed episode's row is written as the
    adapters hand one to a library that reads only tensors: mask 0 and reward 0 everywhere."""
    import torch

    width = width or row_width(layout)
    rewards = torch.zeros(len(episodes), width, dtype=torch.float32)
    mask = torch.zeros(len(episodes), width, dtype=torch.long)
    valid = failed_unmasked if failed_unmasked is not None else [True] * len(episodes)
    for row, (episode, spans, counts) in enumerate(zip(episodes, turn_spans(layout), valid)):
        if not counts:
            continue
        for reward, (start, end) in zip(episode, spans):
            mask[row, start:end] = 1
            rewards[row, end - 1] = reward
    return rewards, mask


def mixed_token_rows(*, width: int | None = None) -> tuple[Any, Any]:
    """``MIXED`` as token rows, its failed episodes written without model tokens."""
    return token_rows(MIXED, MIXED_LAYOUT, width=width, failed_unmasked=MIXED_VALID)


def on_tokens(per_turn: Any, layout: Any = LAYOUT, *, width: int | None = None) -> Any:
    """Per-turn values spread over each turn's model tokens, 0 elsewhere (float64 torch tensor)."""
    import torch

    width = width or row_width(layout)
    out = torch.zeros(len(per_turn), width, dtype=torch.float64)
    for row, (values, spans) in enumerate(zip(per_turn, turn_spans(layout))):
        for value, (start, end) in zip(values, spans):
            out[row, start:end] = float(value)
    return out


def assert_per_token(actual: Any, expected_per_turn: Any = REBN, layout: Any = LAYOUT) -> None:
    """``actual`` (rows x tokens, any width at least the layout's) holds, on every model token, the
    expected value of that token's turn. Tokens outside turns are not compared: libraries mask them."""
    import torch

    actual = torch.as_tensor(actual, dtype=torch.float64).cpu()
    expected = on_tokens(expected_per_turn, layout, width=actual.shape[1])
    _, mask = token_rows([[0.0] * len(t) for t in layout], layout, width=actual.shape[1])
    model = mask.bool()
    difference = (actual - expected).abs()[model]
    if not bool((difference <= TOLERANCE).all()):
        worst = int(difference.argmax())
        raise AssertionError(
            f"per-token advantages differ from gem_core's by up to {float(difference.max()):.3g} "
            f"(model token #{worst}); expected per turn {expected_per_turn}, got rows {actual.tolist()}")

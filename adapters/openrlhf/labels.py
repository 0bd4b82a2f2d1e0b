"""The label of a prompt row: the episode start going in (``env_id``, ``seed``), the played episode
coming out (plus ``turn_rewards`` and ``stop``, and ``failure`` when the episode failed).

OpenRLHF hands each row's label to the agent and keeps the label the agent returns with its
sample through every batching step, so it is where the GEM agent puts each episode's per-turn
rewards for GEM's estimators inside the trainer (see :mod:`gem_adapters.openrlhf.rollout`).
"""

from __future__ import annotations

import json
from typing import Any

from gem_core.errors import GemError


def encode_label(env_id: str, seed: int, **played: Any) -> str:
    """A label as JSON: the episode start, and what was played when given."""
    return json.dumps({"env_id": env_id, "seed": seed, **played})


def decode_label(label: Any) -> dict[str, Any]:
    """A label as a dict with at least ``env_id``; raises a GemError naming the fix."""
    try:
        episode = json.loads(label) if isinstance(label, str) else None
    except json.JSONDecodeError:
        episode = None
    if not isinstance(episode, dict) or not isinstance(episode.get("env_id"), str):
        raise GemError(
            f"The GEM agent reads the environment id and seed from each row's label, but got {label!r}. "
            "Write the dataset with `gem openrlhf config` and pass --data.label_key label."
        )
    return episode


def turn_rewards(label: Any) -> list[float]:
    """The per-turn rewards the GEM agent put in a sample's label."""
    rewards = decode_label(label).get("turn_rewards")
    if not isinstance(rewards, list):
        raise GemError(
            "A sample's label holds no per-turn rewards: GEM's estimators need the episodes played by "
            "the GEM agent (--train.agent_func_path pointing at the file `gem openrlhf config` wrote)."
        )
    return [float(reward) for reward in rewards]


def failure_of(label: Any) -> dict[str, Any] | None:
    """The failure (kind, error, phase, turn) the GEM agent put in a failed episode's label, or
    None."""
    failure = decode_label(label).get("failure")
    return failure if isinstance(failure, dict) else None

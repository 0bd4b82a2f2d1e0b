"""From environments to training samples: seeds, groups, episodes, advantages, turns.

Each training step plays ``episodes_per_step`` episodes, one per vector-environment slot. Slots
are split into groups of ``group_size`` that share an environment id and a seed, so a group's
episodes start from the same state (what group estimators compare). Environment ids are dealt to
groups in turn.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from gem_core.episodes import Episode
from gem_core.estimators import estimate
from gem_core.estimators.dispatch import resolve
from gem_core.estimators.validity import MIN_GROUP_SIZE
from gem_core.multiagent import split_by_agent

from gem_trainer.training.loss import Sample


def slot_env_ids(env_ids: Sequence[str], episodes: int, group_size: int) -> list[str]:
    """The environment id of every slot: groups take the ids in turn."""
    return [env_ids[(slot // group_size) % len(env_ids)] for slot in range(episodes)]


def step_seeds(seed: int, step: int, episodes: int, group_size: int) -> list[int]:
    """Reproducible episode seeds for one step: distinct per group, shared within a group, and
    independent of earlier steps (so a resumed run plays the same episodes)."""
    import numpy as np

    groups = np.random.SeedSequence([seed, step]).generate_state(episodes // group_size, dtype=np.uint32)
    return [int(groups[slot // group_size]) for slot in range(episodes)]


def carried_sampled(vec_env: Any) -> list[tuple[str, str]]:
    """The ``(prompt, action)`` pairs sampled for the episodes that a collection carried over
    (``carry_over``) on ``vec_env``: their turns so far, and actions sampled not yet played;
    the policy keeps their sampled tokens for the step in which they end."""
    carried = getattr(vec_env, "carried", None)
    return [] if carried is None else list(carried.sampled())


def group_ids(episodes: Sequence[Episode]) -> list[int]:
    """Episodes of the same environment, seed and seat (for one seat's part of a self-play
    episode) share an id."""
    ids: dict[tuple[str, Any, Any], int] = {}
    return [ids.setdefault((e.env_id, e.seed, e.agent), len(ids)) for e in episodes]


def seat_advantages(episodes: Sequence[Episode], estimator: Any, *, gamma: float, group_size: int,
                    ) -> list[list[tuple[Episode, Any]]]:
    """Per episode, each seat's part with its per-turn advantages, from ``estimator`` over the
    whole batch of parts. A self-play episode trains as one part per seat, each move credited with
    what its seat earned (:func:`~gem_core.multiagent.split_by_agent`); any other episode is its
    own one part. With ``group_size`` above 1, parts share a group when they share an environment,
    a seed and a seat (:func:`group_ids`). Failed episodes leave the estimator's statistics and
    get advantage 0 (``valid``), and so does a group's lone member in the batch: its other members
    failed, carried over to a later step or were still running at the step's deadline, so it has
    nothing to be compared with."""
    split = [split_by_agent(episode) for episode in episodes]
    parts = [part for seats in split for part in seats]
    groups = group_ids(parts) if group_size > 1 else None
    valid = [p.valid for p in parts]
    needed = getattr(resolve(estimator)[1], MIN_GROUP_SIZE, 1)
    if groups is not None and needed > 1:  # a group the step holds too few of is left out, not refused
        members = Counter(group for group, ok in zip(groups, valid) if ok)
        valid = [ok and members[group] >= needed for group, ok in zip(groups, valid)]
    computed = iter(estimate(estimator, [p.rewards for p in parts], gamma=gamma, group_ids=groups, valid=valid))
    return [[(part, next(computed)) for part in seats] for seats in split]


def training_samples(episodes: Sequence[Episode], advantages: Sequence[Any], policy: Any,
                     ) -> tuple[list[Sample], int, int]:
    """Training samples for the turns whose tokens ``policy`` sampled, each response carrying its
    turn's advantage; consecutive turns of an episode share a sample when their prompts extend
    each other exactly. Also returns the turns trained and the turns left out (over-long
    prompts, where nothing was sampled, and every turn of a failed episode)."""
    samples: list[Sample] = []
    trained = skipped = 0
    for episode, episode_advantages in zip(episodes, advantages):
        if not episode.valid:  # a failed episode teaches nothing: none of its tokens is trained
            for turn in episode.turns:
                policy.take_sampled(turn.observation, turn.action)
            skipped += len(episode.turns)
            continue
        current: Sample | None = None
        for turn, advantage in zip(episode.turns, episode_advantages):
            sampled = policy.take_sampled(turn.observation, turn.action)
            if sampled is None or not sampled.response_ids:
                skipped += 1
                current = None
                continue
            trained += 1
            if sampled.vision is not None:  # a turn with images trains as a sample of its own
                current = None
                samples.append(Sample.turn(sampled.prompt_ids, sampled.response_ids, float(advantage),
                                           vision=sampled.vision))
            elif current is None or not current.extend(sampled.prompt_ids, sampled.response_ids, float(advantage)):
                current = Sample.turn(sampled.prompt_ids, sampled.response_ids, float(advantage))
                samples.append(current)
    return samples, trained, skipped

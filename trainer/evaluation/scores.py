"""Scores of an environment's evaluation episodes: success, return, pass@k and best-of-k.

Scores are taken over the valid episodes: a failed one (its environment broke, not the agent: see
:class:`~gem_core.episodes.Failure`) is counted apart, by kind, and scores nothing.

Episodes that share an environment id and a seed are samples from one start. With ``n`` samples
of a start of which ``c`` succeeded, pass@k is estimated without bias as
``1 - C(n - c, k) / C(n, k)`` (Chen et al., 2021, "Evaluating Large Language Models Trained on
Code"): the chance that at least one of k samples drawn from the n succeeds. The report averages it
over the starts with at least k samples. Best-of-k return is the mean over starts of the highest
return among the start's first k samples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gem_core.episodes import Episode

from gem_trainer.metrics import episode_stats, episode_success, failure_counts

#: How many failed episodes a report describes (seed, kind and error).
FAILED_EXAMPLES = 3


@dataclass
class EnvReport:
    """One environment's scores in ``report.json``."""

    env_id: str
    episodes: int  # the valid episodes, which the scores are taken over
    mean_return: float
    return_stderr: float
    success_rate: float
    turns_per_episode: float
    format_error_rate: float
    seconds: float
    #: Slots taken out of service because their environment kept failing to reset (their reports).
    quarantined: list[dict[str, Any]] = field(default_factory=list)
    #: For games that end with ``info["outcome"]`` (e.g. ``-vs-bot`` ids): the share of episodes
    #: won, drawn and lost; None for other environments.
    outcomes: dict[str, float] | None = None
    #: Starts (seeds) played, and the most samples any of them has.
    starts: int = 0
    samples: int = 1
    #: pass@k for k = 1 .. samples, keyed by k as a string (JSON's keys are strings).
    pass_at_k: dict[str, float] = field(default_factory=dict)
    #: The mean over starts of the best return among ``samples`` samples.
    best_of_k_return: float = 0.0
    #: Episodes that failed (not scored), their share of all played, their count per failure
    #: kind, and the first few of them (seed, kind, error).
    failed: int = 0
    failed_rate: float = 0.0
    failed_kinds: dict[str, int] = field(default_factory=dict)
    failed_examples: list[dict[str, Any]] = field(default_factory=list)


def pass_at_k(samples: int, successes: int, k: int) -> float:
    """The unbiased estimate of pass@k for one start with ``samples`` samples, ``successes`` of
    them successful (``k <= samples``)."""
    if not 1 <= k <= samples:
        raise ValueError(f"pass@{k} needs 1 <= k <= samples ({samples}).")
    if samples - successes < k:
        return 1.0
    return 1.0 - math.comb(samples - successes, k) / math.comb(samples, k)


def by_env(episodes: Sequence[Episode]) -> dict[str, list[Episode]]:
    """Episodes grouped by environment id, in the order the ids first come."""
    grouped: dict[str, list[Episode]] = {}
    for episode in episodes:
        grouped.setdefault(episode.env_id, []).append(episode)
    return grouped


def by_start(episodes: Sequence[Episode]) -> dict[tuple[str, Any], list[Episode]]:
    """Episodes grouped by start (environment id and seed), in the order they come."""
    starts: dict[tuple[str, Any], list[Episode]] = {}
    for episode in episodes:
        starts.setdefault((episode.env_id, episode.seed), []).append(episode)
    return starts


def sampled_scores(episodes: Sequence[Episode]) -> tuple[int, dict[str, float], float]:
    """The most samples a start has (K), pass@k for k = 1 .. K (each over the starts with at least
    k samples), and best-of-K return (over the starts with K samples)."""
    starts = list(by_start(episodes).values())
    if not starts:
        return 0, {}, 0.0
    most = max(len(s) for s in starts)
    scores = {}
    for k in range(1, most + 1):
        eligible = [s for s in starts if len(s) >= k]
        scores[str(k)] = math.fsum(pass_at_k(len(s), sum(map(episode_success, s)), k) for s in eligible) / len(eligible)
    full = [s for s in starts if len(s) == most]
    best = math.fsum(max(e.total_reward for e in s) for s in full) / len(full)
    return most, scores, best


def summarise(env_id: str, episodes: Sequence[Episode], seconds: float) -> EnvReport:
    """``env_id``'s :class:`EnvReport` from its episodes: scores over the valid ones, the failed
    ones counted apart."""
    failed = [e for e in episodes if not e.valid]
    episodes = [e for e in episodes if e.valid]
    stats = episode_stats(episodes)
    returns = [e.total_reward for e in episodes]
    n = len(returns)
    var = math.fsum((r - stats["mean_return"]) ** 2 for r in returns) / (n - 1) if n > 1 else 0.0
    ended = [e.turns[-1].info["outcome"] for e in episodes if e.turns and "outcome" in e.turns[-1].info]
    outcomes = {kind: ended.count(kind) / n for kind in ("win", "draw", "loss")} if ended else None
    samples, passed, best = sampled_scores(episodes)
    examples = [{"seed": e.seed, "kind": e.failure.kind, "error": e.failure.error}  # type: ignore[union-attr]
                for e in failed[:FAILED_EXAMPLES]]
    return EnvReport(env_id, n, stats["mean_return"], math.sqrt(var / n) if n else 0.0,
                     stats["success_rate"], stats["turns_per_episode"], stats["format_error_rate"], seconds,
                     outcomes=outcomes, starts=len(by_start(episodes)), samples=max(samples, 1),
                     pass_at_k=passed, best_of_k_return=best, failed=len(failed),
                     failed_rate=len(failed) / max(len(failed) + n, 1), failed_kinds=failure_counts(failed),
                     failed_examples=examples)

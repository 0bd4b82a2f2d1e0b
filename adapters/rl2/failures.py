"""The kinds of the failed episodes played in this process, which GEM's ``compute_advantages``
reads back for RL2's log (:mod:`gem_adapters.rl2.rollout` records them)."""

from __future__ import annotations

#: The kinds of the failures of the episodes played in this process, in order (see
#: :func:`failures_since`).
FAILURES: list[str] = []


def failures_since(count: int) -> list[str]:
    """The kinds of the latest ``count`` failures, forgetting every failure recorded so far. GEM's
    ``compute_advantages`` calls it with the failed episodes of the batch it was given, which RL2
    plays on rank 0 just before (an evaluation's failures, earlier, are dropped)."""
    latest = FAILURES[len(FAILURES) - count:] if count else []
    FAILURES.clear()
    return latest

"""Scoring with reasoning-gym's own scorers. Runs inside scoring workers (see
:mod:`gem_core.sandbox.worker_pool`): some scorers ``eval`` the answer or hand it to sympy, so they get
a time limit and a sandbox.

Two scorers of reasoning-gym 0.1.25 are replaced because they give full marks to wrong answers:
``game_of_life_halting`` compares ``bool(answer)`` with ``bool(gold)`` (every non-empty answer
passes), graded here by exact case-insensitive match; ``coin_flip`` divides its partial credit by
the shorter string (``0`` scores 1 against any probability below 1), divided here by the longer.

Many scorers (reasoning-gym's default one, ``chain_sum``, ``products``, ``manipulate_matrix``,
``codeio``) pay an answer that contains the right one among other text a share of the reward (its
length over the answer's): a list of every candidate answer is then paid, a little, every time,
where a wrong answer gets nothing, and normalised advantages make that little a lot. Such partial
credit is dropped here: an answer holding the right one and more scores 0.
"""

from __future__ import annotations

import os
from fractions import Fraction
from typing import Any

from gem_envs.rg.datasets import TaskDataset


def _exact_match(answer: str | None, entry: dict[str, Any]) -> float:
    gold = str(entry["answer"]).strip().lower()
    return float(answer is not None and answer.strip().lower() == gold)


def _probability(answer: str | None, entry: dict[str, Any], tolerance: float = 1e-4) -> float:
    try:
        value = float(Fraction((answer or "").replace(",", "")))
        gold = float(Fraction(str(entry["answer"]).replace(",", "")))
    except (ValueError, ZeroDivisionError, OverflowError):
        return 0.0
    if abs(value - gold) <= tolerance:
        return 1.0
    written, expected = f"{value:.10g}", f"{gold:.10g}"
    return len(os.path.commonprefix([written, expected])) / max(len(written), len(expected))


REPLACED_SCORERS = {"game_of_life_halting": _exact_match, "coin_flip": _probability}


def prepare(name: str, size: int, seed: int, config: dict[str, Any]) -> None:
    """Build (once) the dataset whose entries are about to be scored."""
    _dataset(name, size, seed, config)


def score(name: str, size: int, seed: int, config: dict[str, Any], answer: str | None,
          entry: dict[str, Any]) -> float:
    """The score of ``answer`` for ``entry`` of the dataset built from these arguments."""
    source = (entry.get("metadata") or {}).get("source_dataset", name)
    replaced = REPLACED_SCORERS.get(source)
    if replaced is not None:
        return replaced(answer, entry)
    dataset = _dataset(name, size, seed, config)
    value = float(dataset.score_answer(answer=answer, entry=entry))
    gold = str(entry["answer"]).strip()
    if 0 < value < 1 and gold and answer is not None and gold in answer and answer.strip() != gold:
        return 0.0  # paid for containing the right answer among others (see the module)
    return value


def _dataset(name: str, size: int, seed: int, config: dict[str, Any]) -> Any:
    return TaskDataset(name, size, seed, config).dataset  # built once per arguments (cached)


def warm_up() -> None:
    import reasoning_gym  # noqa: F401  (seconds to import; done before the worker reports ready)

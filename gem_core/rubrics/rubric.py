"""Rubrics: rewards made of weighted parts.

A :class:`Criterion` scores a :class:`~gem_core.episodes.Turn` (``scope="turn"``, every step) or a
whole :class:`~gem_core.episodes.Episode` (``scope="episode"``, once, when it ends: a delayed
reward). Its scorer is a function returning a number, or a :class:`~gem_core.rubrics.judging.Judge`.
A :class:`Rubric` holds criteria; :meth:`Rubric.score` runs those of the subject's scope and
returns a :class:`RubricScore`, whose ``total`` is the weighted sum of their scores.
"""

from __future__ import annotations

import asyncio
import math
import numbers
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from gem_core.episodes import Episode, Turn
from gem_core.errors import GemError
from gem_core.rubrics.judging import Judge, Judgement
from gem_core.envspec import load_object

TURN, EPISODE = "turn", "episode"
Scorer = Callable[[Any], float] | Judge | str


@dataclass
class Criterion:
    """One weighted part of a reward: ``score`` (a function of a turn or an episode returning a
    number, a :class:`~gem_core.rubrics.judging.Judge`, or the ``"module:function"`` of either),
    its ``weight``, and its ``scope``, ``"turn"`` or ``"episode"``."""

    name: str
    score: Scorer
    weight: float = 1.0
    scope: str = EPISODE

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise GemError(f"A criterion needs a name, got {self.name!r}.")
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float)) or not math.isfinite(self.weight):
            raise GemError(f"The weight of criterion {self.name!r} must be a finite number, got {self.weight!r}.")
        if self.scope not in (TURN, EPISODE):
            raise GemError(f"The scope of criterion {self.name!r} is 'turn' or 'episode', not {self.scope!r}.")
        if isinstance(self.score, str):
            self.score = load_object(self.score, what=f"criterion {self.name!r}")
        if not callable(self.score):
            raise GemError(f"Criterion {self.name!r} scores with {self.score!r}, which is not callable.")

    @classmethod
    def of(cls, item: Criterion | tuple[Any, ...]) -> Criterion:
        """A criterion from itself or from a tuple ``(name, score[, weight[, scope]])``, the form
        a configuration file gives."""
        if isinstance(item, Criterion):
            return item
        if isinstance(item, (tuple, list)) and 2 <= len(item) <= 4:
            return cls(*item)
        raise GemError(f"A criterion is a Criterion or (name, score[, weight[, scope]]), got {item!r}.")

    @property
    def judged(self) -> bool:
        """Whether a judge model scores this criterion."""
        return isinstance(self.score, Judge)


@dataclass
class PartScore:
    """One criterion's score (``value``, before its ``weight``) and, for a judge, its answer's
    ``text``, whether it was ``cached``, and its ``fault`` (then ``value`` is the fallback)."""

    value: float
    weight: float
    text: str | None = None
    cached: bool = False
    fault: dict[str, str] | None = None

    def to_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"score": self.value, "weight": self.weight}
        if self.text is not None:
            info.update(text=self.text, cached=self.cached, fault=self.fault)
        return info


@dataclass
class RubricScore:
    """The scores of the criteria that ran, by name."""

    parts: dict[str, PartScore] = field(default_factory=dict)

    @property
    def total(self) -> float:
        """The weighted sum of the parts' scores."""
        return math.fsum(part.weight * part.value for part in self.parts.values())

    @property
    def faults(self) -> list[str]:
        """The names of the judged parts whose judge failed."""
        return [name for name, part in self.parts.items() if part.fault is not None]

    def to_info(self) -> dict[str, dict[str, Any]]:
        """The parts as ``info`` holds them: ``{name: {"score", "weight"[, "text", "cached", "fault"]}}``."""
        return {name: part.to_info() for name, part in self.parts.items()}


class Rubric:
    """Criteria that make a reward. ``criteria`` are :class:`Criterion` objects or tuples
    ``(name, score[, weight[, scope]])``; names are unique.

    ``rubric.score(turn)`` runs the turn criteria, ``rubric.score(episode)`` the episode criteria;
    ``await rubric.ascore(...)`` does the same from a coroutine, asking its judges at the same
    time. A function that raises, or returns something other than a finite number, is a
    :class:`~gem_core.errors.GemError` naming the criterion; a judge that fails gives its fallback
    and a fault instead (see :mod:`gem_core.rubrics.judging`).
    """

    def __init__(self, criteria: Iterable[Criterion | tuple[Any, ...]]):
        self.criteria = [Criterion.of(item) for item in criteria]
        names = [c.name for c in self.criteria]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise GemError(f"A rubric's criteria need distinct names; repeated: {', '.join(repeated)}.")
        if not self.criteria:
            raise GemError("A rubric needs at least one criterion.")

    def of_scope(self, scope: str) -> list[Criterion]:
        """The criteria of ``scope``."""
        return [c for c in self.criteria if c.scope == scope]

    @property
    def judged(self) -> bool:
        """Whether a judge model scores any criterion."""
        return any(c.judged for c in self.criteria)

    def score(self, subject: Turn | Episode) -> RubricScore:
        """The scores of the criteria of ``subject``'s scope."""
        return RubricScore({c.name: _part(c, _call(c, subject)) for c in self.of_scope(_scope(subject))})

    async def ascore(self, subject: Turn | Episode) -> RubricScore:
        """:meth:`score` from a coroutine: judges are awaited together, functions run inline."""
        criteria = self.of_scope(_scope(subject))

        async def one(criterion: Criterion) -> Any:
            if criterion.judged:
                return await criterion.score.ajudge(subject)  # type: ignore[union-attr]
            return _call(criterion, subject)

        results = await asyncio.gather(*(one(c) for c in criteria))
        return RubricScore({c.name: _part(c, result) for c, result in zip(criteria, results)})

    def __repr__(self) -> str:
        return f"Rubric({', '.join(f'{c.name}:{c.scope}x{c.weight:g}' for c in self.criteria)})"


def _scope(subject: Turn | Episode) -> str:
    if isinstance(subject, Turn):
        return TURN
    if isinstance(subject, Episode):
        return EPISODE
    raise GemError(f"A rubric scores a Turn or an Episode, not {type(subject).__name__}.")


def _call(criterion: Criterion, subject: Turn | Episode) -> Any:
    try:
        return criterion.score(subject)  # type: ignore[operator]
    except GemError:
        raise
    except Exception as error:
        raise GemError(f"Criterion {criterion.name!r} failed on a {_scope(subject)}: "
                       f"{type(error).__name__}: {error}") from error


def _part(criterion: Criterion, result: Any) -> PartScore:
    if isinstance(result, Judgement):
        return PartScore(result.score, criterion.weight, result.text, result.cached, result.fault)
    if not isinstance(result, numbers.Real) or not math.isfinite(result):
        raise GemError(f"Criterion {criterion.name!r} returned {result!r}; a criterion returns a finite number "
                       "(or a bool, 1 or 0).")
    return PartScore(float(result), criterion.weight)

"""Rewards made of weighted parts, and LLM judges.

* :class:`Criterion`, :class:`Rubric`: weighted functions of a turn or an episode
  (:mod:`gem_core.rubrics.rubric`);
* :class:`Judge`: a model behind an OpenAI-compatible endpoint that scores against a written
  rubric, with retries, a timeout, a cache and a documented fallback
  (:mod:`gem_core.rubrics.judging`, :mod:`gem_core.rubrics.cache`);
* :class:`RubricWrapper` and :func:`judge`: either on any environment, registered as the
  ``rubric`` and ``judge`` wrappers (:mod:`gem_core.rubrics.wrapper`).

The judge's HTTP client (``openai``, extra ``openai``) is imported when a judge is made.
"""

from gem_core.rubrics.cache import JudgeCache
from gem_core.rubrics.judging import Judge, Judgement, parse_score
from gem_core.rubrics.rubric import Criterion, PartScore, Rubric, RubricScore
from gem_core.rubrics.wrapper import DEFAULT_RUBRIC, RubricWrapper, judge

__all__ = [
    "DEFAULT_RUBRIC",
    "Criterion",
    "Judge",
    "JudgeCache",
    "Judgement",
    "PartScore",
    "Rubric",
    "RubricScore",
    "RubricWrapper",
    "judge",
    "parse_score",
]

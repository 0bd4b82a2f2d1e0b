"""Grading a model's response against gold answers.

The answer is the content of the response's last ``\\boxed{}``. Answers that are textually the
same as a gold answer (ignoring spacing and display-only LaTeX such as ``\\left``/``\\dfrac``), and
integer answers to integer golds, are decided here at once. Everything else is compared by
math-verify in a scoring worker under a time limit (:mod:`gem_core.sandbox.worker_pool`): fractions,
decimals, LaTeX, percentages, intervals, sets, units, equations. An answer whose comparison
exceeds the limit is graded incorrect and flagged ``timed_out``.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Sequence
from dataclasses import dataclass

from gem_core.errors import MissingDependencyError
from gem_core.parsing import last_boxed
from gem_core.sandbox.worker_pool import WorkerPool, shared_pool

#: Seconds math-verify may spend on one answer.
DEFAULT_TIME_LIMIT = 2.0
#: Answers longer than this are graded incorrect without being parsed.
MAX_ANSWER_CHARS = 1000


@dataclass(frozen=True)
class Grade:
    """The verdict on one response.

    ``answer`` is the extracted answer (None when the response has no complete ``\\boxed{}``,
    which sets ``format_error``); ``timed_out`` means the comparison hit the time limit;
    ``error`` says why grading failed otherwise (the answer then counts as incorrect).
    """

    correct: bool
    answer: str | None
    format_error: bool = False
    timed_out: bool = False
    error: str | None = None


def grade(response: str, golds: Sequence[str], *, time_limit: float = DEFAULT_TIME_LIMIT) -> Grade:
    """Grade ``response`` (any text) against the acceptable ``golds``."""
    answer, verdict = _grade_here(response, golds)
    if verdict is not None:
        return verdict
    outcome = worker_pool().call("is_equivalent", answer, list(golds), time_limit=time_limit)
    return Grade(outcome.value is True, answer, timed_out=outcome.timed_out, error=outcome.error)


async def agrade(response: str, golds: Sequence[str], *, time_limit: float = DEFAULT_TIME_LIMIT) -> Grade:
    """:func:`grade` for async code: waiting on the worker does not block the event loop."""
    answer, verdict = _grade_here(response, golds)
    if verdict is not None:
        return verdict
    outcome = await worker_pool().acall("is_equivalent", answer, list(golds), time_limit=time_limit)
    return Grade(outcome.value is True, answer, timed_out=outcome.timed_out, error=outcome.error)


def _grade_here(response: str, golds: Sequence[str]) -> tuple[str, Grade | None]:
    """The extracted answer, and the verdict when no worker is needed."""
    answer = last_boxed(response) if isinstance(response, str) else None
    if answer is None:
        return "", Grade(False, None, format_error=True)
    answer = answer.strip()
    if not answer or len(answer) > MAX_ANSWER_CHARS:
        return answer, Grade(False, answer)
    quick = quick_verdict(answer, golds)
    return answer, (None if quick is None else Grade(quick, answer))


# -- the in-process shortcut ------------------------------------------------------------------

_DISPLAY_ONLY = re.compile(r"\\left(?![a-zA-Z])|\\right(?![a-zA-Z])|\\[!,;: ]|\s+")
_INTEGER = re.compile(r"[-+]?\d{1,40}")
_GROUPED_INTEGER = re.compile(r"[-+]?\d{1,3}(?:(?:,|\{,\})\d{3})+")


def canonical(answer: str) -> str:
    """``answer`` without what does not change its meaning: spacing, ``\\left``/``\\right``,
    enclosing ``$``, a final period, and ``\\dfrac``/``\\tfrac`` spelled ``\\frac``."""
    text = _DISPLAY_ONLY.sub("", answer)
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    while len(text) >= 2 and text[0] == "$" and text[-1] == "$":
        text = text[1:-1]
    return text.rstrip(".")


def _as_integer(text: str) -> int | None:
    if _INTEGER.fullmatch(text):
        return int(text)
    if _GROUPED_INTEGER.fullmatch(text):
        return int(text.replace("{,}", "").replace(",", ""))
    return None


def quick_verdict(answer: str, golds: Sequence[str]) -> bool | None:
    """True or False when the answer can be decided without math-verify, else None."""
    text = canonical(answer)
    canonical_golds = [canonical(g) for g in golds]
    if text in canonical_golds:
        return True
    value = _as_integer(text)
    gold_values = [_as_integer(g) for g in canonical_golds]
    if value is not None and gold_values and None not in gold_values:
        return value in gold_values
    return None


# -- the worker pool --------------------------------------------------------------------------


def require_math_verify() -> None:
    """Raise :class:`MissingDependencyError` unless math-verify is installed."""
    try:
        found = importlib.util.find_spec("math_verify") is not None
    except ValueError:  # a module entry without a spec: treat as missing
        found = False
    if not found:
        raise MissingDependencyError("Math answer grading", "math_verify", "envs")


def worker_pool() -> WorkerPool:
    """The process-wide pool of math-verify workers, created on first use."""
    return shared_pool("gem_envs.math.verify", before_start=require_math_verify)

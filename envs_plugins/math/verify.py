"""Answer equivalence with math-verify. Runs inside scoring workers (see
:mod:`gem_core.sandbox.worker_pool`), which enforce the time limit, so math-verify's own signal-based
timeouts are switched off here."""

from __future__ import annotations

from functools import lru_cache

from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

# The answer was already taken out of the response's last \boxed{}; it is boxed again so that
# math-verify reads its whole content as one LaTeX expression.
_EXTRACTION = (LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig())


def _parse(answer: str) -> list:
    return parse("\\boxed{" + answer + "}", extraction_config=_EXTRACTION, parsing_timeout=None)


@lru_cache(maxsize=8192)
def _parse_gold(gold: str) -> tuple:
    return tuple(_parse(gold))


def is_equivalent(answer: str, golds: list[str]) -> bool:
    """Whether ``answer`` (LaTeX or plain text) equals any of the ``golds`` mathematically."""
    parsed = _parse(answer)
    return any(verify(list(_parse_gold(gold)), parsed, timeout_seconds=None) for gold in golds)


def warm_up() -> None:
    """Build math-verify's parsers before the first timed call."""
    is_equivalent("\\frac{1}{2}", ["0.5"])
    is_equivalent("(x+1)^2", ["x^2+2x+1"])
    is_equivalent("[1, 2)", ["\\{1\\}"])

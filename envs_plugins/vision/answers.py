"""Grading of the generated visual tasks: the number in the response's last ``\\boxed{}``.

Rewards: 1 for the right number, 0 for a wrong one, and 0 with ``info["format_error"]`` when
there is no complete ``\\boxed{}`` or its content is not a number. Units, degree signs and
thousands separators are ignored (``\\boxed{60^\\circ}`` and ``\\boxed{60°}`` read as 60).
"""

from __future__ import annotations

import re
from fractions import Fraction

from gem_core.parsing import last_boxed

_NOISE = re.compile(r"\^\s*\{?\\circ\}?|\\circ|°|\\,|\\!|\$|,|\\text\{[^}]*\}|\\mathrm\{[^}]*\}|[a-zA-Z ]+$")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:/\d+)?")


def boxed_number(action: str) -> Fraction | None:
    """The number in the last ``\\boxed{}`` of ``action``, or None when there is none."""
    content = last_boxed(action) if isinstance(action, str) else None
    if content is None or len(content) > 100:
        return None
    text = _NOISE.sub("", content).strip()
    frac = re.fullmatch(r"\\[dt]?frac\{(\d+)\}\{(\d+)\}", text)
    if frac:
        text = f"{frac.group(1)}/{frac.group(2)}"
    if not _NUMBER.fullmatch(text):
        return None
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None

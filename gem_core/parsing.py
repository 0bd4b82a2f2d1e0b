"""Defensive parsing of LLM actions, shared by environments."""

from __future__ import annotations

import re

_BOX_TOKENS = re.compile(r"\\(?:boxed|fbox)\s*\{|[{}]")


def last_boxed(text: str) -> str | None:
    """The content of the last complete ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``.

    Braces nest: ``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``. "Last" means the box that
    opens last, so ``\\boxed{a \\boxed{b}}`` gives ``b``. Unclosed boxes are ignored. Runs in
    linear time on any input; returns None when no box is complete.
    """
    start = text.find("\\boxed")
    fbox = text.find("\\fbox")
    if start < 0 or 0 <= fbox < start:
        start = fbox
    if start < 0:
        return None
    stack: list[int] = []  # content start of an open box, or -1 for a plain brace
    best_start = -1
    best: str | None = None
    for match in _BOX_TOKENS.finditer(text, start):
        token = match.group()
        if token == "}":
            if stack:
                opened = stack.pop()
                if opened > best_start:
                    best_start, best = opened, text[opened:match.start()]
        elif token == "{":
            stack.append(-1)
        else:
            stack.append(match.end())
    return best

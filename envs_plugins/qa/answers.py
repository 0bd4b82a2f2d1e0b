"""Reading an answer from what an LLM wrote, and exact-match scoring against gold answers.

Scoring follows the usual open-domain QA convention (SQuAD, Natural Questions, HotpotQA):
both sides are lower-cased, punctuation is removed, the articles "a", "an" and "the" are dropped
and whitespace is collapsed; the answer is correct when it equals any gold answer after that.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from gem_core.parsing import last_boxed

_OPEN, _CLOSE = "<answer>", "</answer>"
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_ASCII_PUNCTUATION = frozenset(string.punctuation)
# Keys under which datasets keep alternative gold answers (TriviaQA, SQuAD-style records).
_ANSWER_KEYS = ("value", "text", "answer", "aliases", "normalized_aliases", "answers")


def tagged_answer(text: str) -> str | None:
    """The stripped content of the last ``<answer>...</answer>`` (tags in any case), or None.

    "Last" is the last closing tag and the nearest opening tag before it, so
    ``<answer>draft <answer>final</answer>`` gives ``final``.
    """
    if not isinstance(text, str):
        return None
    lowered = text.lower()
    end = lowered.rfind(_CLOSE)
    if end < 0:
        return None
    start = lowered.rfind(_OPEN, 0, end)
    if start < 0:
        return None
    return text[start + len(_OPEN):end].strip()


def boxed_answer(text: str) -> str | None:
    """The stripped content of the last ``\\boxed{...}``, or None."""
    answer = last_boxed(text) if isinstance(text, str) else None
    return answer.strip() if answer is not None else None


def normalize_answer(text: str) -> str:
    """Lower case, no punctuation (ASCII or Unicode), no articles, single spaces."""
    text = text.lower()
    text = "".join(
        ch for ch in text
        if ch not in _ASCII_PUNCTUATION and not (ord(ch) > 127 and unicodedata.category(ch).startswith("P"))
    )
    return " ".join(_ARTICLES.sub(" ", text).split())


def gold_answers(raw: Any) -> list[str]:
    """Gold answers as a list of strings, from a string, a number, a list of them, or a record
    with ``value``/``aliases``/``text``-style keys."""
    if raw is None:
        return []
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, bool):
        return [str(raw)]
    if isinstance(raw, (int, float)):
        return [str(raw)]
    if isinstance(raw, Mapping):
        found: list[str] = []
        for key in _ANSWER_KEYS:
            found.extend(gold_answers(raw.get(key)))
        return list(dict.fromkeys(found))
    if hasattr(raw, "tolist"):  # numpy arrays, as some readers return them
        return gold_answers(raw.tolist())
    if isinstance(raw, Iterable):
        return list(dict.fromkeys(a for item in raw for a in gold_answers(item)))
    return [str(raw)]


def exact_match(prediction: str, golds: Any) -> bool:
    """True when ``prediction`` equals one of the gold answers after normalisation.

    An answer that normalises to nothing (only punctuation or articles) never matches.
    """
    if not isinstance(prediction, str):
        return False
    predicted = normalize_answer(prediction)
    if not predicted:
        return False
    return any(predicted == normalize_answer(gold) for gold in gold_answers(golds))

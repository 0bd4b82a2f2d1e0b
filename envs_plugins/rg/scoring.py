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

An answer must not reach the scorer's variables, which hold the right answer. Some scorers
(``string_insertion``, ``spiral_matrix``, ``binary_matrix``, ``n_queens``) read an answer written
as a Python list with ``eval``, in their own frame, where the answer ``oracle_answer`` is the right
one; others (``polynomial_multiplication``, the integrations, ``puzzle24``, ``countdown``) hand it
to sympy's ``parse_expr``, which evaluates Python with the builtins, so that
``__import__('sys')._getframe(3).f_locals['entry']['answer']`` reads it. While a scorer runs here,
``eval`` in reasoning-gym's modules reads Python literals (:func:`ast.literal_eval`, all a list
of answers needs) and arithmetic of numbers (a problem a scorer evaluates) only, and ``parse_expr`` reads plain mathematics only: numbers, operators,
parentheses, and names that are sympy's numbers, functions and classes or become symbols; no
attribute, subscript, string, keyword or other callable (anything else scores 0, as an answer
sympy cannot parse does).
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import keyword
import operator
import os
import sys
import tokenize
from collections.abc import Iterator
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
    with _literals_only():
        value = float(dataset.score_answer(answer=answer, entry=entry))
    gold = str(entry["answer"]).strip()
    if 0 < value < 1 and gold and answer is not None and gold in answer and answer.strip() != gold:
        return 0.0  # paid for containing the right answer among others (see the module)
    return value


@contextlib.contextmanager
def _literals_only() -> Iterator[None]:
    """While the block runs, answers are read as plain data (see the module): ``eval`` of
    reasoning-gym's modules reads literals and arithmetic, sympy's ``parse_expr`` plain mathematics."""
    sympy_parser = sys.modules.get("sympy.parsing.sympy_parser")
    original = getattr(sympy_parser, "parse_expr", None)
    guarded = _plain_math_parser(original) if original is not None else None
    patched: list[tuple[dict[str, Any], str, Any]] = []  # (namespace, name, what it held; _MISSING if nothing)
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith("reasoning_gym"):
            continue
        names = vars(module)
        if "eval" not in names:
            patched.append((names, "eval", _MISSING))
            names["eval"] = _literal_eval  # shadows the builtin in that module alone
        for attr, value in list(names.items()):
            if original is not None and value is original:
                patched.append((names, attr, value))
                names[attr] = guarded
    for module in (sympy_parser, sys.modules.get("sympy")):
        if module is not None and getattr(module, "parse_expr", None) is original and original is not None:
            patched.append((vars(module), "parse_expr", original))
            vars(module)["parse_expr"] = guarded
    try:
        yield
    finally:
        for names, attr, value in reversed(patched):
            if value is _MISSING:
                names.pop(attr, None)
            else:
                names[attr] = value


_MISSING = object()
_MATH_OPERATORS = frozenset("+ - * / ** // % ( ) , < > <= >= == != & | ~ ^".split())


#: Operators of the arithmetic that ``eval`` reads beside literals (a problem such as bitwise_arithmetic's
#: ``(0x3a + 0x1f) << 2``, which its scorer evaluates), with no name, call or attribute to reach anything.
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
               ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
               ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_,
               ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.USub: operator.neg, ast.UAdd: operator.pos,
               ast.Invert: operator.invert}
_MAX_BITS = 4096  # an exponent or shift beyond this is refused, not computed


def _literal_eval(source: Any, globals: Any = None, locals: Any = None) -> Any:
    """A literal, or arithmetic of numbers (:data:`_ARITHMETIC`); anything else is a ``ValueError``."""
    try:
        return ast.literal_eval(source)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        if not isinstance(source, str):
            raise
    return _arithmetic(ast.parse(source.strip(), mode="eval").body)


def _arithmetic(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, complex):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _ARITHMETIC:
        return _ARITHMETIC[type(node.op)](_arithmetic(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        power = isinstance(node.op, ast.Pow) and isinstance(left, int)
        if isinstance(node.op, (ast.Pow, ast.LShift)) and (
                abs(right) > _MAX_BITS or (power and abs(left).bit_length() * abs(right) > _MAX_BITS)):
            raise ValueError("a number too large to compute")
        return _ARITHMETIC[type(node.op)](left, right)
    raise ValueError(f"not a literal or arithmetic: {type(node).__name__}")


def _plain_math_parser(parse_expr: Any) -> Any:
    """``parse_expr`` that refuses (``ValueError``) any text but plain mathematics."""
    import sympy

    def parse_plain_math(s: Any, local_dict: Any = None, *args: Any, **kwargs: Any) -> Any:
        if isinstance(s, str):
            names = {**vars(sympy), **(kwargs.get("global_dict") or {}), **(local_dict or {})}
            _check_plain_math(s, names, sympy.Basic)
        return parse_expr(s, local_dict, *args, **kwargs)

    return parse_plain_math


def _check_plain_math(text: str, names: dict[str, Any], basic: type) -> None:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError) as e:
        raise ValueError(f"not mathematics: {e}") from None
    for token in tokens:
        kind, value = token.type, token.string
        if kind in (tokenize.NUMBER, tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER) or \
                (kind == tokenize.OP and value in _MATH_OPERATORS):
            continue
        if kind == tokenize.NAME and not keyword.iskeyword(value) and not value.startswith("_") and \
                (value not in names or _mathematical(names[value], basic)):
            continue
        raise ValueError(f"not mathematics: {value!r}")


def _mathematical(value: Any, basic: type) -> bool:
    """A sympy number, symbol or class of them, or one of sympy's mathematical functions."""
    if isinstance(value, basic) or (isinstance(value, type) and issubclass(value, basic)):
        return True
    return inspect.isfunction(value) and getattr(value, "__module__", "").startswith("sympy.functions.")


def _dataset(name: str, size: int, seed: int, config: dict[str, Any]) -> Any:
    return TaskDataset(name, size, seed, config).dataset  # built once per arguments (cached)


def warm_up() -> None:
    import reasoning_gym  # noqa: F401  (seconds to import; done before the worker reports ready)

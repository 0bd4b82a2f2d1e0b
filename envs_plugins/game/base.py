"""What the language games share: rewards, answer parsing, the turn loop and its flags.

A game subclasses :class:`GameEnv` and implements ``new_game`` (draw a fresh puzzle from
``self.rng``), ``parse_move`` (the text of the last ``\\boxed{}`` to a move, or None), ``play``
(apply a move: message, reward, :class:`Outcome`), ``random_move`` (from ``self.action_rng``), ``instructions`` and
``task_suffix``. The base class turns those into Gym transitions:

* no parseable move: ``Reward.FORMAT_ERROR``, ``terminated=True``, ``info["format_error"]``;
* a won or lost game: ``terminated=True``, ``info["success"]``;
* the turn limit: ``truncated=True``, ``info["success"] = False``, and the reward the game
  gives at its limit (``reward_at_turn_limit``);
* otherwise the game goes on; ``info["invalid_move"]`` marks a well-formed move that broke a rule.

``task_suffix`` is cached: a game whose move changes what it shows sets ``self._suffix = None``.

A game whose moves (for its current settings) form a short list may set ``listed`` to
:class:`ListedMoves`: an action that is exactly a listed boxed move, and an answer written the
usual way, are then looked up instead of parsed, and random actions may be drawn from the list
instead of calling ``random_move``. Steps are hot, so this saves the calls on the common path;
``parse_move`` still reads every other spelling.

Every step's info has ``turn`` (turns taken) and ``suffix`` (the current board and what to do
next, which observation wrappers append to the observation).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from gem_core import Env, GemError
from gem_core.parsing import last_boxed

StepResult = tuple[str, float, bool, bool, dict[str, Any]]
T = TypeVar("T")

#: Box contents longer than this are not read as a move (a format error).
MAX_ANSWER_CHARS = 200


class Reward:
    """Per-turn rewards shared by the games (documented in docs/envs.md)."""

    SUCCESS = 1.0  # the game is won
    STEP = 0.0  # a valid move that does not end the game
    FAIL = 0.0  # the game is lost (a mine)
    INVALID = 0.0  # well-formed but against the rules (out of range, repeated, blocked)
    FORMAT_ERROR = -0.1  # no parseable move in the last \boxed{}; ends the episode


class Outcome:
    """What a move did, as told by :meth:`GameEnv.play` (plain constants: steps are hot)."""

    ONGOING = "ongoing"
    INVALID = "invalid"
    WON = "won"
    LOST = "lost"


_ONGOING, _INVALID, _WON = Outcome.ONGOING, Outcome.INVALID, Outcome.WON


class GameSettingsError(GemError, ValueError):
    """Constructor arguments that describe no playable game."""


class ResetNeededError(GemError, RuntimeError):
    """``step`` or ``sample_random_action`` before the first ``reset``."""


@dataclass(frozen=True)
class ListedMoves(Generic[T]):
    """The moves of a game's current settings: for each, the move ``parse_move`` returns, by the
    move's usual text (``by_text``) and by that text boxed (``by_action``); and ``actions``, the
    boxed moves that random actions are drawn from uniformly (empty: ``random_move`` makes
    them). Shared between environments: never modified."""

    by_text: Mapping[str, T] = field(default_factory=dict)
    by_action: Mapping[str, T] = field(default_factory=dict)
    actions: tuple[str, ...] = ()

    @classmethod
    def of(cls, moves: Iterable[tuple[str, T]], *, random_from_list: bool = True) -> ListedMoves[T]:
        """List ``(text, move)`` pairs; ``random_from_list=False`` keeps ``random_move``."""
        by_text = dict(moves)
        by_action = {f"\\boxed{{{text}}}": move for text, move in by_text.items()}
        return cls(by_text, by_action, tuple(by_action) if random_from_list else ())


#: No listed moves: every answer goes through ``parse_move``.
NO_LISTED_MOVES: ListedMoves[Any] = ListedMoves()


class GameEnv(Env):
    """Base class of the language games (see the module docstring for the contract)."""

    #: The move syntax inside ``\\boxed{}``, quoted in format-error messages.
    action_format: str = "\\boxed{...}"
    max_turns: int = 1
    turn: int = 0
    _ready: bool = False
    #: The cached ``task_suffix()``; a game sets it to None whenever a move changes the board.
    _suffix: str | None = None
    #: The moves of the current settings, when the game lists them (see :class:`ListedMoves`).
    listed: ListedMoves[Any] = NO_LISTED_MOVES
    #: The reward of a turn with no parseable move (a game may take it as a setting).
    format_error_reward: float = Reward.FORMAT_ERROR

    # -- what a game implements ---------------------------------------------------------------

    def new_game(self) -> None:
        """Draw a new puzzle (and, for ``-random`` variants, new settings) from ``self.rng``."""
        raise NotImplementedError

    def parse_move(self, answer: str) -> Any | None:
        """The move written in ``answer`` (stripped box content), or None if it is not one."""
        raise NotImplementedError

    def play(self, move: Any) -> tuple[str, float, Outcome]:
        """Apply a parsed move; return the feedback, the reward and the outcome."""
        raise NotImplementedError

    def random_move(self) -> str:
        """A random well-formed move, as the text that goes inside ``\\boxed{}`` (not needed
        while ``listed.actions`` lists them)."""
        raise NotImplementedError

    def instructions(self) -> str:
        """The first observation: the rules and the action format."""
        raise NotImplementedError

    def task_suffix(self) -> str:
        """The current board (if any) and what to do next."""
        return "Enter your move."

    def reward_at_turn_limit(self, reward: float) -> float:
        """The reward of the step that hits the turn limit (games with partial credit override)."""
        return reward

    # -- the turn loop ----------------------------------------------------------------------------

    def reset(self, seed: int | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        if seed is not None or not self._ready:  # else Env.reset has nothing to do: skip the call
            super().reset(seed)
        self.turn = 0
        self.new_game()
        self._ready = True
        self._suffix = suffix = self.task_suffix()
        return self.instructions(), {"turn": 0, "suffix": suffix}

    def step(self, action: str) -> StepResult:
        if not self._ready:
            raise self._reset_needed("step")
        self.turn = turn = self.turn + 1
        listed = self.listed
        try:
            move = listed.by_action.get(action)
        except TypeError:  # unhashable, so not text: parse_answer finds no move
            move = None
        if move is None:
            answer = parse_answer(action)
            if answer is not None:
                move = listed.by_text.get(answer)
                if move is None:
                    move = self.parse_move(answer)
        if move is None:
            return (
                f"Turn {turn}: no valid move found. Write your move in the last \\boxed{{}} "
                f"as {self.action_format}. Game over.",
                self.format_error_reward, True, False,
                {"turn": turn, "suffix": self._suffix, "format_error": True, "success": False},
            )
        message, reward, outcome = self.play(move)
        suffix = self._suffix
        if suffix is None:
            self._suffix = suffix = self.task_suffix()
        info = {"turn": turn, "suffix": suffix}
        if outcome is _ONGOING:
            if turn < self.max_turns:
                return message, reward, False, False, info
        elif outcome is _INVALID:
            info["invalid_move"] = True
            if turn < self.max_turns:
                return message, reward, False, False, info
        else:
            info["success"] = outcome is _WON
            return message, reward, True, False, info
        info["success"] = False
        message = f"{message}\nYou have used all {self.max_turns} turns. Game over."
        return message, self.reward_at_turn_limit(reward), False, True, info

    def sample_random_action(self) -> str:
        if not self._ready:
            raise self._reset_needed("sample_random_action")
        actions = self.listed.actions
        if actions:  # pick() inlined, from the action generator
            return actions[int((self._action_rng or self.action_rng).random() * len(actions))]
        return f"\\boxed{{{self.random_move()}}}"

    def _reset_needed(self, method: str) -> ResetNeededError:
        return ResetNeededError(f"Call reset() before {method}() on {type(self).__name__}.")


def parse_answer(action: str) -> str | None:
    """The stripped content of the last complete ``\\boxed{}`` (as
    :func:`gem_core.parsing.last_boxed` reads it); None if there is none or it is longer than
    :data:`MAX_ANSWER_CHARS`."""
    try:
        _, box, tail = action.rpartition("\\boxed{")
    except AttributeError:  # not a string
        return None
    # Fast path for the usual answer: a last \boxed{ with no \boxed or \fbox after it, closed
    # by the first "}" with no "{" before it. That box opens last and is complete, so
    # last_boxed would return the same text.
    if box and "\\boxed" not in tail and "\\fbox" not in tail:
        answer, closed, _ = tail.partition("}")
        if closed and "{" not in answer:
            return answer.strip() if len(answer) <= MAX_ANSWER_CHARS else None
    answer = last_boxed(action)
    if answer is None or len(answer) > MAX_ANSWER_CHARS:
        return None
    return answer.strip()


def pick(rng: random.Random, items: Sequence[T]) -> T:
    """A uniformly random item (as ``rng.choice``, a few times faster for hot samplers)."""
    return items[int(rng.random() * len(items))]


def random_int(rng: random.Random, low: int, high: int) -> int:
    """A uniformly random integer in ``[low, high]`` (as ``rng.randint``, faster)."""
    return low + int(rng.random() * (high - low + 1))


def check_positive(name: str, value: int, minimum: int = 1) -> None:
    """Raise :class:`GameSettingsError` unless ``value`` is an int of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise GameSettingsError(f"{name} must be an integer >= {minimum}, got {value!r}.")

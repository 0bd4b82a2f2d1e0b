"""Observation wrappers: show the agent the episode so far, not just the latest observation.

Four formats, registered under their names:

* ``concat``: every observation so far, one after another;
* ``concat_with_action``: observations and the agent's actions, alternating;
* ``concat_chat``: the same exchange as chat messages (observations as ``user`` turns, actions as
  ``assistant`` turns) rendered with a tokenizer's chat template, ending with the generation
  prompt;
* ``concat_chat_on_reset``: the first observation rendered with the chat template, then actions
  and observations appended as plain text (the whole episode is one assistant reply).

In the text formats every piece ends with a line break. ``max_history_length=N`` keeps the
first observation (the task) and the last ``N`` turns. Info keys read from the environment:
``prefix``/``suffix`` are placed before/after the observation they came with (a game's board and
what to do next; not after the episode's last observation, when nothing is left to do); ``use_tool`` makes the observation a ``tool`` message in chat formats;
``parsed_action`` replaces the raw action in the history; ``images`` holds the images of an
observation (see :mod:`gem_core.images`). The history shows every observation exactly as the agent
saw it at its turn, so each rendering extends the one before it.

Images are carried across turns: the text formats keep each observation's ``<image>``
placeholders, the chat formats render images as content parts through the chat template, and
the wrapper's ``info["images"]`` holds every image of the observation it returns, in order.
"""

from __future__ import annotations

import functools
from collections import deque
from typing import Any

from gem_core.core import Env, ResetResult, ResultWrapper, StepResult
from gem_core.errors import GemError, MissingDependencyError
from gem_core.images import chat_message, images_of

FORMATS = ("concat", "concat_with_action", "concat_chat", "concat_chat_on_reset")
#: An observation as the agent saw it: (text piece, chat message content, role, images).
Seen = tuple[str, str, str, list[Any]]


class HistoryWrapper(ResultWrapper):
    """Rewrites each observation as the episode so far, in one of :data:`FORMATS`.

    ``tokenizer`` (required by the chat formats) is an object with ``apply_chat_template``, such
    as a Hugging Face tokenizer, or the path or name of one to load with ``transformers``.
    """

    def __init__(self, env: Env, format: str = "concat_with_action", *,
                 max_history_length: int | None = None, tokenizer: Any = None):
        super().__init__(env)
        if format not in FORMATS:
            raise GemError(f"Unknown observation format {format!r}; choose one of {', '.join(FORMATS)}.")
        if max_history_length is not None and (
            isinstance(max_history_length, bool) or not isinstance(max_history_length, int)
            or max_history_length < 1
        ):
            raise GemError(f"max_history_length must be a positive integer or None, got {max_history_length!r}.")
        self.format = format
        self.max_history_length = max_history_length
        self.tokenizer = _chat_tokenizer(tokenizer, format) if format.startswith("concat_chat") else tokenizer
        # Each observation as the agent saw it: (text piece, chat message content, role, images).
        self._first: Seen = ("", "", "user", [])
        self._first_rendered = ""  # the first observation through the chat template (on_reset)
        self._turns: deque[tuple[str, Seen]] = deque(maxlen=max_history_length)  # (action, seen)

    def on_reset(self, observation: str, info: dict[str, Any]) -> ResetResult:
        self._first = _seen(observation, info)
        self._turns.clear()
        if self.format == "concat_chat_on_reset":
            _, content, role, images = self._first
            self._first_rendered = self._template([chat_message(role, content, images)])
            return self._first_rendered, self._with_images(info)
        return self._render(), self._with_images(info)

    def on_step(self, action: str, result: StepResult) -> StepResult:
        observation, reward, terminated, truncated, info = result
        parsed = info.get("parsed_action")
        seen = _seen(observation, info, done=terminated or truncated)
        self._turns.append((parsed if isinstance(parsed, str) else action, seen))
        return self._render(), reward, terminated, truncated, self._with_images(info)

    def _with_images(self, info: dict[str, Any]) -> dict[str, Any]:
        """``info`` with the images of every observation shown, when there are any."""
        images = self._first[3] + [image for _, seen in self._turns for image in seen[3]]
        return {**info, "images": images} if images else info

    def _render(self) -> str:
        if self.format == "concat_chat":
            _, content, role, images = self._first
            messages = [chat_message(role, content, images)]
            for action, (_, content, role, images) in self._turns:
                messages.append({"role": "assistant", "content": action})
                messages.append(chat_message(role, content, images))
            return self._template(messages)
        pieces = [self._first_rendered if self.format == "concat_chat_on_reset" else self._first[0]]
        for action, (piece, *_) in self._turns:
            if self.format != "concat":
                pieces.append(action)
            pieces.append(piece)
        return "".join(map(_line, pieces[:-1])) + pieces[-1]

    def _template(self, messages: list[dict[str, Any]]) -> str:
        try:
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        except Exception as e:  # a template that cannot render these messages is a setup error
            raise GemError(f"The tokenizer's chat template failed on the {self.format} messages: "
                           f"{type(e).__name__}: {e}") from e


def concat(env: Env, *, max_history_length: int | None = None) -> HistoryWrapper:
    """Every observation so far, one after another."""
    return HistoryWrapper(env, "concat", max_history_length=max_history_length)


def concat_with_action(env: Env, *, max_history_length: int | None = None) -> HistoryWrapper:
    """Observations and actions so far, alternating."""
    return HistoryWrapper(env, "concat_with_action", max_history_length=max_history_length)


def concat_chat(env: Env, *, tokenizer: Any = None, max_history_length: int | None = None) -> HistoryWrapper:
    """The episode so far as chat messages rendered with ``tokenizer``'s chat template."""
    return HistoryWrapper(env, "concat_chat", tokenizer=tokenizer, max_history_length=max_history_length)


def concat_chat_on_reset(env: Env, *, tokenizer: Any = None,
                         max_history_length: int | None = None) -> HistoryWrapper:
    """The first observation through the chat template, then actions and observations as text."""
    return HistoryWrapper(env, "concat_chat_on_reset", tokenizer=tokenizer,
                              max_history_length=max_history_length)


def _line(text: str) -> str:
    return text + "\n" if text and not text.endswith("\n") else text


def as_seen(observation: str, info: dict[str, Any], *, done: bool = False) -> str:
    """``observation`` as an agent is shown it, on its own: with the prefix and suffix in ``info``
    (a game's board and what to do next), the suffix left out once the episode is ``done``. This
    is the chat message the chat formats make of it."""
    return _seen(observation, info, done=done)[1]


def _seen(observation: str, info: dict[str, Any], *, done: bool = False) -> Seen:
    """An observation with its info's prefix and suffix (none once the episode is ``done``), as a
    text piece and as message content, the role of its message, and its images."""
    prefix, suffix = _text(info.get("prefix")), "" if done else _text(info.get("suffix"))
    return (prefix + _line(observation) + suffix,
            prefix + (_line(observation) + suffix if suffix else observation), _role(info), images_of(info))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _role(info: dict[str, Any]) -> str:
    return "tool" if info.get("use_tool") else "user"


def _chat_tokenizer(tokenizer: Any, format: str) -> Any:
    if tokenizer is None:
        raise GemError(f"The {format} wrapper needs a tokenizer with a chat template: pass "
                       "tokenizer=<a tokenizer object or its path> (in make_vec: "
                       "wrapper_options={'tokenizer': ...}).")
    if isinstance(tokenizer, str):
        tokenizer = load_tokenizer(tokenizer)
    if not callable(getattr(tokenizer, "apply_chat_template", None)):
        raise GemError(f"The {format} wrapper needs a tokenizer with apply_chat_template(); "
                       f"got {type(tokenizer).__name__}.")
    if getattr(tokenizer, "chat_template", "") is None:
        raise GemError(f"The tokenizer given to {format} has no chat template; use an instruction-"
                       "tuned model's tokenizer or set tokenizer.chat_template.")
    return tokenizer


@functools.lru_cache(maxsize=8)
def load_tokenizer(name_or_path: str) -> Any:
    """A Hugging Face tokenizer, loaded once per process (``transformers`` needed)."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise MissingDependencyError("Loading a tokenizer by name", "transformers", "chat") from None
    try:
        return AutoTokenizer.from_pretrained(name_or_path)
    except (OSError, ValueError) as e:
        raise GemError(f"Cannot load a tokenizer from {name_or_path!r}: {e}") from e

"""The text around model turns, from a tokenizer's chat template, for adapters that hand the
library text between turns (the first prompt, and what follows each answer)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import cached_property
from typing import Any

from gem_core.errors import GemError

logger = logging.getLogger("gem_adapters")
#: (library, chat template) pairs already warned about, so each is said once per process.
_WARNED: set[tuple[str, str]] = set()


class ChatFormat:
    """The first prompt, and what follows a model answer before the next one (the end of the
    answer's turn, the observation as a user message, the generation prompt).

    The latter is read off a probe conversation rendered with the template: whatever follows a
    probe answer once a user message is added. Whether the answer already ended its turn is
    read from its token ids: it did when its last token is the template's end-of-turn token (the
    special token the template writes right after an answer, such as ``<|im_end|>``), never from
    its text, which cannot tell that token from the same characters written as ordinary tokens,
    nor a cut answer ending in ``<`` from one ending in the token.

    ``chat_template`` renders in place of the tokenizer's own (a processor's, say), with
    ``template_kwargs`` (such as ``enable_thinking``) passed to every render.
    """

    PROBE_USER, PROBE_ANSWER = "Hello.", "GEM-ANSWER-PROBE"
    #: An answer as a reasoning model writes it, ending in whitespace: templates that drop past
    #: reasoning or trim answers render it otherwise in a later turn.
    PROBE_WRITTEN = "<think>\nGEM-REASONING-PROBE\n</think>\n\nGEM-ANSWER-PROBE \n"

    def __init__(self, tokenizer: Any, *, chat_template: str | None = None,
                 template_kwargs: dict[str, Any] | None = None):
        self.tokenizer = tokenizer
        self.chat_template = chat_template
        self.template_kwargs = dict(template_kwargs or {})
        if not (chat_template or getattr(tokenizer, "chat_template", None)):
            raise GemError("GEM formats turns with the tokenizer's chat template, but this tokenizer "
                           "has none; train a chat (instruct) model.")
        self.end_of_turn_id = self._end_of_turn_id(self._after(""))

    def render(self, messages: list[dict[str, Any]], *, generation_prompt: bool = False,
               tools: list[dict[str, Any]] | None = None) -> str:
        """``messages`` through the template; ``tools`` (JSON schemas of functions, as the OpenAI
        API takes them) are rendered where the template puts them."""
        options: dict[str, Any] = {"tokenize": False, "add_generation_prompt": generation_prompt, **self.template_kwargs}
        if tools:
            options["tools"] = tools
        if self.chat_template is not None:
            options["chat_template"] = self.chat_template
        return self.tokenizer.apply_chat_template(messages, **options)

    def first(self, observation: str) -> str:
        return self.render([{"role": "user", "content": observation}], generation_prompt=True)

    def ended_turn(self, answer: Sequence[int]) -> bool:
        """Whether the answer's token ids end with the template's end-of-turn token."""
        return self.end_of_turn_id is not None and len(answer) > 0 and int(answer[-1]) == self.end_of_turn_id

    def after_answer(self, answer: Sequence[int], observation: str) -> str:
        """The text between ``answer`` (its token ids) and the model's next answer, without the
        end-of-turn token when the answer wrote it; an answer cut before it gets it here."""
        return self.after_answer_messages(answer, [{"role": "user", "content": observation}])

    def after_answer_messages(self, answer: Sequence[int], messages: list[dict[str, Any]]) -> str:
        """:meth:`after_answer` for any messages following the answer (tool results, a user
        message, several of them): the rest of the answer's turn, ``messages`` as the template
        renders them after an answer, and the generation prompt."""
        after = self._after_messages(messages)
        if self.ended_turn(answer):
            return after[len(self.tokenizer.decode([self.end_of_turn_id], skip_special_tokens=False)):]
        return after

    def answer_content(self, answer: Sequence[int]) -> str:
        """The answer as the environment gets it: its text without special tokens (its
        end-of-turn token, another stop token, any special token inside it)."""
        return self.tokenizer.decode(list(answer), skip_special_tokens=True)

    def encode(self, text: str) -> list[int]:
        """Token ids of chat-template text (its special tokens are in the text already)."""
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    @cached_property
    def rewrites_history(self) -> bool:
        """Whether the template shows an earlier answer otherwise than the model wrote it: a full
        render of the conversation then differs from the sampled answers kept in one sequence."""
        user = {"role": "user", "content": self.PROBE_USER}
        full = self.render([user, {"role": "assistant", "content": self.PROBE_WRITTEN},
                            {"role": "user", "content": self.PROBE_USER}], generation_prompt=True)
        return not full.startswith(self.first(self.PROBE_USER) + self.PROBE_WRITTEN)

    def warn_if_rewriting(self, library: str) -> None:
        """Say once per process and template when :attr:`rewrites_history` holds."""
        key = (library, self.chat_template or str(getattr(self.tokenizer, "chat_template", "")))
        if key in _WARNED or not self.rewrites_history:
            return
        _WARNED.add(key)
        logger.warning(
            "%s: this chat template renders earlier answers otherwise than the model wrote them (it drops their "
            "reasoning, trims them or wraps them), so an episode trained as one sequence keeps each answer as "
            "sampled, in a context a full render of the conversation would not give; see 'Token faithfulness' "
            "in GEM's training docs.", library)

    def _after(self, observation: str) -> str:
        return self._after_messages([{"role": "user", "content": observation}])

    def _after_messages(self, messages: list[dict[str, Any]]) -> str:
        probe = self.render([{"role": "user", "content": self.PROBE_USER},
                             {"role": "assistant", "content": self.PROBE_ANSWER}, *messages], generation_prompt=True)
        return probe[probe.index(self.PROBE_ANSWER) + len(self.PROBE_ANSWER):]  # the first: messages may hold it too

    def _end_of_turn_id(self, after: str) -> int | None:
        """The added token that ``after`` (what follows an answer) starts with, if any."""
        ids = self.encode(after)
        if not ids:
            return None
        added = getattr(self.tokenizer, "added_tokens_decoder", {})
        return int(ids[0]) if int(ids[0]) in added else None

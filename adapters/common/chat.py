"""The text around model turns, from a tokenizer's chat template, for adapters that hand the
library text between turns (the first prompt, and what follows each answer)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gem_core.errors import GemError


class ChatFormat:
    """The first prompt, and what follows a model answer before the next one (the end of the
    answer's turn, the observation as a user message, the generation prompt).

    The latter is read off a probe conversation rendered with the template: whatever follows a
    probe answer once a user message is added. Templates that rewrite earlier turns when one is
    added (such as Qwen3's, which drops past reasoning) change only what precedes the answer.
    """

    PROBE_USER, PROBE_ANSWER = "Hello.", "GEM-ANSWER-PROBE"

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        if not getattr(tokenizer, "chat_template", None):
            raise GemError("GEM formats turns with the tokenizer's chat template, but this tokenizer "
                           "has none; train a chat (instruct) model.")

    def render(self, messages: list[dict[str, str]], *, generation_prompt: bool = False) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False,
                                                  add_generation_prompt=generation_prompt)

    def first(self, observation: str) -> str:
        return self.render([{"role": "user", "content": observation}], generation_prompt=True)

    def after_answer(self, answer: str | Sequence[int], observation: str) -> str:
        """The text between ``answer`` (its text with special tokens kept, or its token ids) and
        the model's next answer, without what the answer already holds of it (its end-of-turn
        token)."""
        after = self._after(observation)
        return after[self._written(self._text(answer), after):]

    def answer_content(self, answer: str | Sequence[int]) -> str:
        """The answer's text without the end of turn the model wrote (e.g. ``<|im_end|>``)."""
        text = self._text(answer)
        return text[:len(text) - self._written(text, self._after(""))]

    def _after(self, observation: str) -> str:
        probe = self.render([{"role": "user", "content": self.PROBE_USER},
                             {"role": "assistant", "content": self.PROBE_ANSWER},
                             {"role": "user", "content": observation}], generation_prompt=True)
        return probe[probe.rindex(self.PROBE_ANSWER) + len(self.PROBE_ANSWER):]

    def _text(self, answer: str | Sequence[int]) -> str:
        return answer if isinstance(answer, str) else self.tokenizer.decode(list(answer), skip_special_tokens=False)

    @staticmethod
    def _written(answer: str, after: str) -> int:
        """How much of ``after`` the answer already ends with."""
        return next(k for k in range(min(len(after), len(answer)), -1, -1) if answer.endswith(after[:k]))

"""A scripted sampler: token ids in, token ids out, every call recorded.

Each answer is one of :data:`KINDS`, chosen from the game and round the prompt shows (the echo
environment's observations name them), so the same prompt always gets the same answer and every
episode gets every kind, whatever the batch: answers a tokenizer would write (``plain``), ids that
decode to text whose canonical tokenisation differs (``non_canonical``), a special token inside
an answer, answers cut by the token limit before their end-of-turn token (``cut``, and ending in
``<`` or ``<|``, a prefix of ``<|im_end|>``), answers ending in a space or a newline, an answer
ended by another stop token, an answer that is only its end-of-turn token, and a reasoning block
that templates such as Qwen3's drop from earlier turns."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

KINDS = ("plain", "non_canonical", "special_mid", "cut", "cut_lt", "cut_lt_pipe", "space", "newline",
         "other_stop", "empty", "think")
ROUND = re.compile(r"Game (\d+), round (\d+)")


@dataclass(frozen=True)
class Call:
    """One sampling call: the ids the sampler was given and the ids it returned."""

    seed: int
    turn: int  # 0 for an episode's first answer
    kind: str
    prompt: tuple[int, ...]
    output: tuple[int, ...]


@dataclass
class Script:
    """Answers prompts of the echo environment with token ids; ``calls`` records each call.

    ``end_of_turn``, ``other_stop`` and ``mid_special`` are token strings of ``tokenizer``: the
    template's end-of-turn token, another stop token, and a special token to put inside an answer."""

    tokenizer: Any
    end_of_turn: str
    other_stop: str
    mid_special: str
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self):
        ids = [self.tokenizer.convert_tokens_to_ids(t) for t in (self.end_of_turn, self.other_stop, self.mid_special)]
        self.end_id, self.other_id, self.mid_id = ids
        assert self.tokenizer.convert_ids_to_tokens(ids) == [self.end_of_turn, self.other_stop, self.mid_special]

    def __call__(self, prompt_ids: Sequence[int]) -> list[int]:
        text = self.tokenizer.decode(list(prompt_ids), skip_special_tokens=False)
        found = ROUND.findall(text)
        assert found, f"not a prompt of the echo environment: {text[-200:]!r}"
        seed, turn = (int(x) for x in found[-1])
        kind = KINDS[(seed + turn) % len(KINDS)]
        output = self.answer(kind, turn)
        self.calls.append(Call(seed, turn, kind, tuple(prompt_ids), tuple(output)))
        return list(output)

    def answer(self, kind: str, turn: int) -> list[int]:
        encode = lambda text: self.tokenizer.encode(text, add_special_tokens=False)  # noqa: E731
        end = [self.end_id]
        if kind == "plain":
            return encode(f"I guess {turn}.") + end
        if kind == "non_canonical":
            text = f"I guess {turn}."
            ids = [i for character in text for i in encode(character)]
            assert ids != encode(text) and self.tokenizer.decode(ids) == text
            return ids + end
        if kind == "special_mid":
            return encode("I guess") + [self.mid_id] + encode(f" {turn}.") + end
        if kind == "cut":
            return encode(f"I guess {turn} and")
        if kind == "cut_lt":
            return encode(f"is {turn} <")
        if kind == "cut_lt_pipe":
            return encode(f"is {turn} <|")
        if kind == "space":
            return encode(f"is {turn} ") + end
        if kind == "newline":
            return encode(f"is {turn}\n") + end
        if kind == "other_stop":
            return encode(f"I stop at {turn}.") + [self.other_id]
        if kind == "empty":
            return end
        if kind == "think":
            return encode(f"<think>\nround {turn}\n</think>\n\nI guess {turn}.") + end
        raise ValueError(kind)

    def action(self, output: Sequence[int]) -> str:
        """The text an environment should get for ``output``: the answer without special tokens."""
        return self.tokenizer.decode(list(output), skip_special_tokens=True)

    def canonical(self, output: Sequence[int]) -> bool:
        """Whether ``output`` (without its end-of-turn token) is what tokenizing its text gives: a
        full render of the conversation then holds the very ids that were sampled."""
        ids = list(output)
        if ids[-1:] == [self.end_id]:
            ids = ids[:-1]
        return ids == self.tokenizer.encode(self.action(output), add_special_tokens=False)

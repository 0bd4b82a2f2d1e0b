"""Fixtures of the harness stage: agent programs GEM does not run (the OpenAI Agents SDK,
mini-swe-agent) play GEM environments through the gateway. A scripted backend stands in for a
model that calls tools on cue (tests/gateway/scripted.py: a real tokenizer, ids chosen by the
test, served over HTTP as vLLM serves); the gateway, the harness and the trainer are real."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("agents", reason="the harness tests run in the harnesses stage: stage-test harnesses")

from tests.gateway.conftest import qwen3_tokenizer, smollm2_tokenizer  # noqa: E402,F401 - fixtures

GAME = "game:GuessTheNumber-v0-easy"
FEEDBACK = re.compile(r"you guessed (\d+); the number is (higher|lower)")


def binary_search(tokenizer, *, tool: bool = True):
    """A model that plays GuessTheNumber by bisection from the feedback in its prompt: a
    ``step`` tool call (``tool``), or the guess as mini-swe-agent's command block; once the game
    says "Correct", a final answer."""
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")

    def answer(prompt: list[int]) -> list[int]:
        text = tokenizer.decode(prompt, skip_special_tokens=False)
        low, high = 1, 10
        for guess, direction in FEEDBACK.findall(text):
            if direction == "higher":
                low = max(low, int(guess) + 1)
            else:
                high = min(high, int(guess) - 1)
        if "Correct!" in text:
            reply = "I found the number."
        elif tool:
            reply = ('Guessing.\n<tool_call>\n{"name": "step", "arguments": {"action": "\\\\boxed{%d}"}}\n</tool_call>'
                     % ((low + high) // 2))
        else:  # mini-swe-agent's text format: one command in a mswea_bash_command block
            reply = "THOUGHT: bisect.\n\n```mswea_bash_command\n\\boxed{%d}\n```" % ((low + high) // 2)
        return tokenizer.encode(reply, add_special_tokens=False) + [end]

    return answer

"""The text between turns, from SmolLM2's real chat template."""

from __future__ import annotations

import copy

import pytest

from gem_adapters.common.chat import ChatFormat
from gem_core import GemError
from tests.wrappers.conftest import smollm2_tokenizer, smollm2_tokenizer_dir  # noqa: F401 - fixtures

AFTER = "\n<|im_start|>user\nHigher.<|im_end|>\n<|im_start|>assistant\n"


def test_the_first_prompt_and_the_text_after_an_answer(smollm2_tokenizer):
    chat = ChatFormat(smollm2_tokenizer)
    assert chat.first("Guess.") == smollm2_tokenizer.apply_chat_template(
        [{"role": "user", "content": "Guess."}], tokenize=False, add_generation_prompt=True)
    assert chat.after_answer("\\boxed{3}<|im_end|>", "Higher.") == AFTER  # the answer ended its turn
    assert chat.after_answer("\\boxed{3", "Higher.") == "<|im_end|>" + AFTER  # cut by a token limit
    ids = smollm2_tokenizer.encode("\\boxed{3}<|im_end|>", add_special_tokens=False)
    assert chat.after_answer(ids, "Higher.") == AFTER  # token ids read as their text


def test_the_answer_content_drops_the_end_of_turn_the_model_wrote(smollm2_tokenizer):
    chat = ChatFormat(smollm2_tokenizer)
    assert chat.answer_content("\\boxed{3}<|im_end|>") == "\\boxed{3}"
    assert chat.answer_content("\\boxed{3}") == "\\boxed{3}"
    assert chat.answer_content(smollm2_tokenizer.encode("hi<|im_end|>", add_special_tokens=False)) == "hi"


def test_a_tokenizer_without_a_chat_template_is_refused(smollm2_tokenizer):
    tokenizer = copy.deepcopy(smollm2_tokenizer)
    tokenizer.chat_template = None
    with pytest.raises(GemError, match="chat template"):
        ChatFormat(tokenizer)

"""The text between turns, from SmolLM2's real chat template; whether an answer ended its turn is
read from its token ids."""

from __future__ import annotations

import copy
import logging

import pytest

from gem_adapters.common.chat import ChatFormat
from gem_core import GemError
from tests.wrappers.conftest import smollm2_tokenizer, smollm2_tokenizer_dir  # noqa: F401 - fixtures

AFTER = "\n<|im_start|>user\nHigher.<|im_end|>\n<|im_start|>assistant\n"


def ids(tokenizer, text):
    return tokenizer.encode(text, add_special_tokens=False)


def test_the_first_prompt_and_the_text_after_an_answer(smollm2_tokenizer):
    chat = ChatFormat(smollm2_tokenizer)
    assert chat.first("Guess.") == smollm2_tokenizer.apply_chat_template(
        [{"role": "user", "content": "Guess."}], tokenize=False, add_generation_prompt=True)
    assert chat.end_of_turn_id == smollm2_tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert chat.after_answer(ids(smollm2_tokenizer, "\\boxed{3}<|im_end|>"), "Higher.") == AFTER  # it ended its turn
    assert chat.after_answer(ids(smollm2_tokenizer, "\\boxed{3"), "Higher.") == "<|im_end|>" + AFTER  # cut short


@pytest.mark.parametrize("cut", ["is 5 <", "is 5 <|", "is 5 <|im_end", "is 5 ", "is 5\n", ""])
def test_an_answer_cut_in_a_prefix_of_the_end_of_turn_text_still_gets_the_token(smollm2_tokenizer, cut):
    chat = ChatFormat(smollm2_tokenizer)
    answer = ids(smollm2_tokenizer, cut)
    assert chat.after_answer(answer, "Higher.") == "<|im_end|>" + AFTER
    assert chat.answer_content(answer) == cut  # the environment gets every character


def test_the_end_of_turn_characters_written_as_ordinary_tokens_do_not_end_the_turn(smollm2_tokenizer):
    chat = ChatFormat(smollm2_tokenizer)
    spelled = [i for c in "hi<|im_end|>" for i in ids(smollm2_tokenizer, c)]
    assert smollm2_tokenizer.decode(spelled) == "hi<|im_end|>" and not chat.ended_turn(spelled)
    assert chat.after_answer(spelled, "Higher.") == "<|im_end|>" + AFTER


def test_the_answer_content_is_its_text_without_special_tokens(smollm2_tokenizer):
    chat = ChatFormat(smollm2_tokenizer)
    assert chat.answer_content(ids(smollm2_tokenizer, "\\boxed{3}<|im_end|>")) == "\\boxed{3}"
    assert chat.answer_content(ids(smollm2_tokenizer, "a<|im_start|>b<|endoftext|>")) == "ab"
    other_stop = ids(smollm2_tokenizer, "hi<|endoftext|>")  # another stop token: the turn is not ended
    assert chat.after_answer(other_stop, "Higher.") == "<|im_end|>" + AFTER


def test_templates_that_render_earlier_answers_otherwise_are_found_and_said_once(smollm2_tokenizer, caplog):
    assert not ChatFormat(smollm2_tokenizer).rewrites_history
    for rewrite in ("m['content'].split('</think>')[-1]", "m['content'] | trim"):  # drops reasoning; trims
        tokenizer = copy.deepcopy(smollm2_tokenizer)
        tokenizer.chat_template = (
            "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
            "{% if m['role'] == 'assistant' %}{{ " + rewrite + " }}{% else %}{{ m['content'] }}{% endif %}"
            "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
        chat = ChatFormat(tokenizer)
        assert chat.rewrites_history
        with caplog.at_level(logging.WARNING, logger="gem_adapters"):
            chat.warn_if_rewriting("test")
            ChatFormat(tokenizer).warn_if_rewriting("test")
        assert caplog.text.count("renders earlier answers otherwise") == 1
        caplog.clear()


def test_a_tokenizer_without_a_chat_template_is_refused(smollm2_tokenizer):
    tokenizer = copy.deepcopy(smollm2_tokenizer)
    tokenizer.chat_template = None
    with pytest.raises(GemError, match="chat template"):
        ChatFormat(tokenizer)

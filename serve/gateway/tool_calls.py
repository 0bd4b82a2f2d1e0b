"""Tool calls read from what the model wrote, in the model's own format.

A parser turns an answer's text (its sampled ids decoded, special tokens kept where the format
needs them) into ``(content, calls)``. Every call the answer holds is returned, in order (parallel
calls included). An answer whose calls cannot be read (JSON that does not parse, a call without
a name, a block left open by the token limit) comes back as plain text with no call: the harness
sees what the model wrote, never an error.

* ``hermes``: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks, as the
  templates of Qwen2.5, Qwen3, SmolLM3 and Hermes write them;
* ``none``: no tool calls, the answer is text.

:func:`parser_for` picks one from the chat template.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from gem_core.errors import GemError


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # JSON text, as the OpenAI API carries it
    id: str

    def as_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


HERMES_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)


def no_calls(text: str) -> tuple[str, list[ToolCall]]:
    return text, []


def hermes(text: str) -> tuple[str, list[ToolCall]]:
    """Calls in ``<tool_call>`` blocks; the text around them is the content."""
    if "<tool_call>" not in text:
        return text, []
    calls = []
    for block in HERMES_BLOCK.findall(text):
        call = _call(block)
        if call is None:
            return text, []
        calls.append(call)
    rest = HERMES_BLOCK.sub("", text)
    if "<tool_call>" in rest or "</tool_call>" in rest:  # a block left open or unopened
        return text, []
    return rest.strip(), calls


def _call(block: str) -> ToolCall | None:
    try:
        value = json.loads(block)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return ToolCall(value["name"], json.dumps(arguments, ensure_ascii=False), f"call_{uuid.uuid4().hex[:24]}")


PARSERS = {"hermes": hermes, "none": no_calls}


def parser_for(chat_template: str, name: str = "auto"):
    """The parser ``name``, or for ``auto`` the one the template's own format calls for."""
    if name == "auto":
        name = "hermes" if "<tool_call>" in chat_template else "none"
    if name not in PARSERS:
        raise GemError(f"Unknown tool-call format {name!r}; the gateway reads: auto, {', '.join(PARSERS)}.")
    return PARSERS[name]

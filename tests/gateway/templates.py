"""Chat templates for the gateway's tests, with SmolLM2's tokenizer (whose ChatML tokens they use).

:data:`QWEN3_STYLE` writes tools and tool calls as Qwen3's template does (a ``<tools>`` block in
the system message, ``<tool_call>`` blocks in answers, ``<tool_response>`` blocks in a user turn)
and, like it, drops the reasoning (``<think>...</think>``) of earlier answers from a full render."""

from __future__ import annotations

import copy
from typing import Any

QWEN3_STYLE = (
    "{%- if tools %}{{ '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{ messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{ '# Tools\\n\\nYou may call one or more functions.\\n\\n<tools>' }}"
    "{%- for tool in tools %}{{ '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{ '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": <function-name>, \\\"arguments\\\": "
    "<args-json-object>}\\n</tool_call><|im_end|>\\n' }}"
    "{%- elif messages[0].role == 'system' %}{{ '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'system' and loop.first %}"
    "{%- elif message.role == 'assistant' %}"
    "{%- set content = message.content.split('</think>')[-1].lstrip('\\n') %}"
    "{{ '<|im_start|>assistant\\n' + content }}"
    "{%- for call in message.tool_calls or [] %}"
    "{{ '\\n<tool_call>\\n{\"name\": \"' + call.function.name + '\", \"arguments\": ' + (call.function.arguments | tojson) + '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{ '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{ '<|im_start|>user' }}{%- endif %}"
    "{{ '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{ '<|im_end|>\\n' }}{%- endif %}"
    "{%- else %}{{ '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}"
)


def qwen3_style(tokenizer: Any) -> Any:
    """A copy of SmolLM2's ``tokenizer`` rendering :data:`QWEN3_STYLE`, with ``<think>``,
    ``</think>``, ``<tool_call>`` and ``</tool_call>`` as added tokens that decoding keeps (as
    Qwen's are)."""
    wide = copy.deepcopy(tokenizer)
    wide.add_tokens(["<think>", "</think>", "<tool_call>", "</tool_call>"])
    wide.chat_template = QWEN3_STYLE
    return wide

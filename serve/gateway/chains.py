"""A session's token chain: the prompt ids of each call, continued from what was sampled.

A harness sends its whole conversation with every call. When the messages extend the session's
last call (the same messages, then the answer the gateway gave, then new ones), the prompt is the
last prompt and the sampled ids, plus the chat template's continuation for the new messages only
(:meth:`~gem_adapters.common.chat.ChatFormat.after_answer_messages`): nothing the model saw is
re-tokenised, and only the new messages are rendered and tokenised. Otherwise the harness
rewrote its history (dropped reasoning, a summary, an edited message, other tools) and the call
opens a new segment, rendered whole, with the reason kept.

Messages are compared as the template sees them (:func:`template_message`): role, text, tool
calls by name and arguments, tool results. Tool-call ids are left out of the comparison: SDKs
regenerate them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gem_adapters.common.chat import ChatFormat


class RequestError(Exception):
    """A request the gateway refuses (HTTP 400), with the reason."""

    def __init__(self, message: str, param: str | None = None, status: int = 400):
        super().__init__(message)
        self.param, self.status = param, status


ROLES = {"system", "developer", "user", "assistant", "tool"}


def template_message(message: Any, index: int) -> dict[str, Any]:
    """An OpenAI chat message as chat templates take it: ``developer`` as ``system``, content as
    text, tool calls' arguments as objects. Image and audio parts are refused: their tokens are
    not the gateway's to record."""
    if not isinstance(message, dict) or message.get("role") not in ROLES:
        raise RequestError(f"messages[{index}] must be an object with a role ({', '.join(sorted(ROLES))}).",
                           f"messages[{index}]")
    role = "system" if message["role"] == "developer" else message["role"]
    out: dict[str, Any] = {"role": role, "content": _text(message.get("content"), index)}
    if role == "assistant" and message.get("tool_calls"):
        calls = []
        for k, call in enumerate(message["tool_calls"]):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                raise RequestError(f"messages[{index}].tool_calls[{k}] needs function.name.",
                                   f"messages[{index}].tool_calls")
            arguments = function.get("arguments") or "{}"
            try:
                parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
            except ValueError:
                parsed = arguments  # as the harness sent it; the template renders it as text
            calls.append({"type": "function", "function": {"name": function["name"], "arguments": parsed}})
        out["tool_calls"] = calls
    if role == "tool":
        out["tool_call_id"] = str(message.get("tool_call_id") or "")
    if isinstance(message.get("name"), str):
        out["name"] = message["name"]
    return out


def _text(content: Any, index: int) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        texts = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind not in ("text", "input_text", "output_text"):
                raise RequestError(f"messages[{index}] holds a {kind!r} content part; the gateway records text only "
                                   "(images and audio become tokens it does not see).", f"messages[{index}].content")
            texts.append(str(part.get("text", "")))
        return "".join(texts)
    raise RequestError(f"messages[{index}].content must be text or a list of text parts.", f"messages[{index}].content")


def comparable(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` without what SDKs regenerate (tool-call ids)."""
    return {key: value for key, value in message.items() if key != "tool_call_id"}


@dataclass
class Prompt:
    """The ids of one call's prompt, its segment, why it opened one (None: it continues), and the
    messages rendered for it (template form: the new ones, or all of a new segment's)."""

    ids: list[int]
    segment: int
    reason: str | None
    rendered: list[dict[str, Any]]


@dataclass
class Chain:
    """What a session's next call continues: the messages the last call sent (as the harness sent
    them), the answer the gateway gave (template form), their ids (the last prompt and the sampled
    answer) and the tools.

    The check that a call extends the chain compares the messages already sent as they are (a
    list comparison that costs next to nothing per message) and converts only the echoed answer
    and the new messages; only when that fails are all messages compared as the template sees
    them (an SDK that re-serialised its history), and a call that differs there opens a segment."""

    chat: ChatFormat
    sent: list[Any] = field(default_factory=list)
    answered: dict[str, Any] = field(default_factory=dict)
    ids: list[int] = field(default_factory=list)
    answer: list[int] = field(default_factory=list)
    tools: Any = None
    segment: int = -1

    def prompt(self, messages: list[Any], tools: list[dict[str, Any]] | None) -> Prompt:
        """The prompt ids for ``messages`` (as the harness sent them) and ``tools``."""
        if not isinstance(messages, list) or not messages:
            raise RequestError("messages must be a non-empty list.", "messages")
        new, reason = self._continuation(messages, tools)
        if reason is None:
            after = self.chat.after_answer_messages(self.answer, new)
            return Prompt(self.ids + self.chat.encode(after), self.segment, None, new)
        every = converted(messages)
        text = self.chat.render(every, generation_prompt=True, tools=tools)
        return Prompt(self.chat.encode(text), self.segment + 1, reason if self.segment >= 0 else None, every)

    def advance(self, prompt: Prompt, messages: list[Any], tools: Any, answer: list[int],
                answered: dict[str, Any]) -> None:
        """Record a call: the messages it sent, the ids sampled and the answer returned."""
        self.sent, self.answered = messages, comparable(answered)
        self.ids, self.answer, self.tools, self.segment = prompt.ids + answer, list(answer), tools, prompt.segment

    def _continuation(self, messages: list[Any], tools: Any) -> tuple[list[dict[str, Any]], str | None]:
        """The new messages (template form) when ``messages`` continue the chain, else why not."""
        if self.segment < 0:
            return [], "first call"
        if (tools or None) != (self.tools or None):
            return [], "the tools changed"
        known = len(self.sent)
        if len(messages) > known + 1 and messages[:known] == self.sent:  # the fast path: as sent before
            echoed = messages[known]
            if isinstance(echoed, dict) and echoed.get("role") == "assistant" \
                    and comparable(template_message(echoed, known)) == self.answered:
                new = converted(messages[known + 1:], known + 1)
                if new and new[0]["role"] != "assistant":
                    return new, None
        every = converted(messages)
        before = [comparable(m) for m in converted(self.sent)] + [self.answered]
        if len(every) <= len(before):
            return [], f"the conversation has {len(every)} messages, not more than the {len(before)} answered"
        for index, (sent, kept) in enumerate(zip(every, before)):
            if comparable(sent) != kept:
                what = "the answer the gateway gave" if index == len(before) - 1 else "what an earlier call sent"
                return [], f"messages[{index}] ({sent['role']}) differs from {what}"
        return every[len(before):], None


def converted(messages: list[Any], offset: int = 0) -> list[dict[str, Any]]:
    """OpenAI messages as template messages, consecutive assistant messages as one (an SDK may
    split an answer's text from its calls)."""
    merged: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        message = template_message(message, offset + index)
        if merged and message["role"] == "assistant" == merged[-1]["role"]:
            last = dict(merged[-1])
            last["content"] = last.get("content", "") + message.get("content", "")
            calls = list(last.get("tool_calls") or []) + list(message.get("tool_calls") or [])
            if calls:
                last["tool_calls"] = calls
            merged[-1] = last
        else:
            merged.append(message)
    return merged

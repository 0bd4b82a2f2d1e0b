"""The OpenAI chat-completions API as the gateway speaks it: which request fields it takes, and
the answers (a completion, or the events of a stream synthesised after generation).

A request asks for what the gateway can record faithfully or is refused (HTTP 400) with the
field named: one choice (``n`` 1), no stop strings (they cut text where no token ends), no
logit bias, no structured output, no forced tool choice (both need constrained decoding), text
content only, sampled-token log-probabilities only (``top_logprobs`` 0).
"""

from __future__ import annotations

import json
import math
import time
import uuid
from dataclasses import dataclass
from typing import Any

from gem_serve.gateway.backends import Sampling
from gem_serve.gateway.chains import RequestError, template_message
from gem_serve.gateway.tool_calls import ToolCall

#: Fields read (``model`` names the model: any name is the one served).
TAKEN = {"model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature",
         "top_p", "seed", "tools", "tool_choice", "parallel_tool_calls", "logprobs", "top_logprobs", "n",
         "frequency_penalty", "presence_penalty", "stop", "logit_bias", "response_format", "user", "metadata",
         "store", "service_tier", "reasoning_effort"}
#: Fields refused whatever their value, and why.
REFUSED = {"audio": "audio output", "modalities": "audio output", "prediction": "predicted outputs",
           "web_search_options": "web search", "functions": "the legacy functions API (send tools)",
           "function_call": "the legacy functions API (send tool_choice)"}


@dataclass(frozen=True)
class ChatRequest:
    """A checked request."""

    messages: list[Any]  # as the harness sent them (checked and converted by the chain)
    tools: list[dict[str, Any]] | None
    sampling: Sampling
    stream: bool
    include_usage: bool
    logprobs: bool
    calls_allowed: bool  # tool_choice is not "none"
    model: str


def parse_request(body: Any, *, max_tokens: int, forced: dict[str, Any] | None = None) -> ChatRequest:
    """Check ``body``; ``max_tokens`` caps (and defaults) the answer length; ``forced`` sampling
    settings replace the request's (temperature, top_p) or join them (any other field, for the
    backend: a trainer's ``top_k``)."""
    if not isinstance(body, dict):
        raise RequestError("The body must be a JSON object.")
    for key in body:
        if key in REFUSED:
            raise RequestError(f"The gateway does not take {key} ({REFUSED[key]}): it records text generation only.", key)
        if key not in TAKEN:
            raise RequestError(f"The gateway does not take {key}: it cannot record what that changes.", key)
    if body.get("n", 1) not in (1, None):
        raise RequestError("n must be 1: the gateway records one sampled answer per call (send n calls).", "n")
    if body.get("stop"):
        raise RequestError("stop sequences are not taken: they end an answer inside a token, so the sampled ids "
                           "and the text would differ; end answers with the model's own stop token.", "stop")
    if body.get("logit_bias"):
        raise RequestError("logit_bias is not taken: it changes the distribution the recorded log-probabilities "
                           "come from.", "logit_bias")
    response_format = body.get("response_format")
    if response_format and (not isinstance(response_format, dict) or response_format.get("type") != "text"):
        raise RequestError("response_format must be text: structured output needs constrained decoding, which the "
                           "gateway does not record.", "response_format")
    tool_choice = body.get("tool_choice", "auto")
    if tool_choice not in ("auto", "none", None):
        raise RequestError("tool_choice must be auto or none: forcing a call needs constrained decoding, which the "
                           "gateway does not record.", "tool_choice")
    if body.get("top_logprobs"):
        raise RequestError("top_logprobs must be 0: the gateway returns the sampled ids' log-probabilities only.",
                           "top_logprobs")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty list.", "messages")
    tools = body.get("tools") or None
    if tools is not None and (not isinstance(tools, list) or not all(
            isinstance(t, dict) and t.get("type", "function") == "function" and isinstance(t.get("function"), dict)
            and isinstance(t["function"].get("name"), str) for t in tools)):
        raise RequestError('tools must be a list of {"type": "function", "function": {"name": ..., "parameters": '
                           "...}}.", "tools")
    length = body.get("max_completion_tokens", body.get("max_tokens"))
    if length is None:
        length = max_tokens
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise RequestError("max_tokens must be a positive integer.", "max_tokens")
    forced = forced or {}
    temperature = _number(body, "temperature", 1.0, 0.0, 2.0) if "temperature" not in forced else forced["temperature"]
    top_p = _number(body, "top_p", 1.0, 0.0, 1.0) if "top_p" not in forced else forced["top_p"]
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise RequestError("seed must be an integer.", "seed")
    extra = {key: _number(body, key, 0.0, -2.0, 2.0) for key in ("frequency_penalty", "presence_penalty")
             if body.get(key)}
    extra.update({key: value for key, value in forced.items() if key not in ("temperature", "top_p")})
    stream_options = body.get("stream_options") or {}
    return ChatRequest(messages, tools, Sampling(min(length, max_tokens), temperature, top_p, seed, extra),
                       bool(body.get("stream")), bool(isinstance(stream_options, dict)
                                                      and stream_options.get("include_usage")),
                       bool(body.get("logprobs")), tool_choice != "none", str(body.get("model") or ""))


def _number(body: dict[str, Any], key: str, default: float, low: float, high: float) -> float:
    value = body.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high or math.isnan(value):
        raise RequestError(f"{key} must be a number from {low:g} to {high:g}.", key)
    return float(value)


@dataclass(frozen=True)
class Answer:
    """One call's answer, from which the completion and the stream are written."""

    id: str
    created: int
    model: str
    content: str
    calls: list[ToolCall]
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    #: (token text, logprob) per sampled id, when the request asked for log-probabilities.
    logprobs: list[tuple[str, float]] | None

    @classmethod
    def new(cls, model: str, content: str, calls: list[ToolCall], finish_reason: str, prompt_tokens: int,
            completion_tokens: int, logprobs: list[tuple[str, float]] | None) -> Answer:
        return cls(f"chatcmpl-{uuid.uuid4().hex}", int(time.time()), model, content, calls,
                   "tool_calls" if calls else finish_reason, prompt_tokens, completion_tokens, logprobs)

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content if self.content or not self.calls else None}
        if self.calls:
            message["tool_calls"] = [call.as_openai() for call in self.calls]
        return message

    def template_message(self) -> dict[str, Any]:
        """The answer as the harness's next call should hold it (see :mod:`.chains`)."""
        return template_message(self.message(), 0)

    def usage(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens}

    def _logprobs(self) -> dict[str, Any] | None:
        if self.logprobs is None:
            return None
        return {"content": [{"token": token, "logprob": value, "bytes": list(token.encode("utf-8")), "top_logprobs": []}
                            for token, value in self.logprobs], "refusal": None}

    def completion(self) -> dict[str, Any]:
        return {"id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "message": self.message(), "finish_reason": self.finish_reason,
                             "logprobs": self._logprobs()}],
                "usage": self.usage()}

    def events(self, include_usage: bool) -> list[str]:
        """The stream's server-sent events, ``[DONE]`` last."""
        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
            body = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish, **extra}]}
            return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

        events = [chunk({"role": "assistant", "content": ""})]
        if self.content or not self.calls:
            events.append(chunk({"content": self.content}, logprobs=self._logprobs()))
        for index, call in enumerate(self.calls):
            events.append(chunk({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                                 "function": {"name": call.name, "arguments": call.arguments}}]}))
        events.append(chunk({}, self.finish_reason))
        if include_usage:
            body = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                    "choices": [], "usage": self.usage()}
            events.append(f"data: {json.dumps(body)}\n\n")
        events.append("data: [DONE]\n\n")
        return events


def error_body(message: str, param: str | None = None, kind: str = "invalid_request_error",
               code: str | None = None) -> dict[str, Any]:
    """An error as the OpenAI API writes it (what SDKs read the message from)."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}

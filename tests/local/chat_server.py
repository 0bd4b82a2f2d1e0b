"""A minimal OpenAI-compatible chat server over a local model, for testing ``gem eval``.

It serves ``GET /v1/models`` and ``POST /v1/chat/completions`` with the standard JSON shapes (the
HTTP side is :class:`tests.openai_servers.StubChatServer`'s), renders messages with the model's
chat template (image content parts as ``<image>``: the model reads text only), and samples with the
model (from the request's ``seed`` when it has one). It checks the bearer key when one is set, and
records the largest number of requests it had in flight at once.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from tests.openai_servers import StubChatServer


class ChatServer(StubChatServer):
    """``with ChatServer(folder, name) as server: server.base_url ...``"""

    def __init__(self, model_dir: Path, name: str, *, api_key: str | None = None, delay: float = 0.05):
        from gem_trainer.models import load_model, load_tokenizer

        super().__init__(self.complete, delay=delay, model=name, api_key=api_key)  # delay: requests overlap
        self.tokenizer = load_tokenizer(model_dir)
        self.model_weights = load_model(model_dir, trainable=False)
        self._generating = threading.Lock()  # one generation at a time

    def complete(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        from gem_trainer.decoding.sampling import LocalPolicy, SamplingSettings

        if body.get("model") != self.model:
            return 404, {"error": {"message": f"model {body.get('model')!r} not found"}}
        messages = [{"role": m["role"], "content": _text(m["content"])} for m in body["messages"]]
        prompt = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        settings = SamplingSettings(max_new_tokens=int(body.get("max_tokens") or 16),
                                    temperature=float(body.get("temperature", 1.0)),
                                    top_p=float(body.get("top_p", 1.0)))
        with self._generating:
            policy = LocalPolicy(self.model_weights, self.tokenizer, settings, record=False)
            ids = self.tokenizer.encode(prompt, add_special_tokens=False)
            seeds = [int(body["seed"])] if body.get("seed") is not None else None  # OpenAI's seed, for reproducible samples
            response = policy.generate([ids], seeds=seeds)[0]
        text = self.tokenizer.decode(response, skip_special_tokens=True)
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop" if response and response[-1] in policy.stop_ids else "length"}],
            "usage": {"prompt_tokens": len(ids), "completion_tokens": len(response),
                      "total_tokens": len(ids) + len(response)},
        }


def _text(content: str | list[dict[str, Any]]) -> str:
    """Message content as text for a text-only model: image parts become ``<image>``."""
    if isinstance(content, str):
        return content
    return "".join(part["text"] if part["type"] == "text" else "<image>" for part in content)

"""A minimal OpenAI-compatible chat server over a local model, for testing ``gem eval``.

It serves ``GET /v1/models`` and ``POST /v1/chat/completions`` with the standard JSON shapes,
renders messages with the model's chat template (image content parts as ``<image>``: the model reads
text only), and samples with the model (from the request's ``seed`` when it has one). It checks the
bearer key when one is set, and records the largest number of requests it had in flight at once.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.helpers import send_json


class ChatServer:
    """``with ChatServer(folder, name) as server: server.base_url ...``"""

    def __init__(self, model_dir: Path, name: str, *, api_key: str | None = None, delay: float = 0.05):
        from gem_trainer.models import load_model, load_tokenizer
        from gem_trainer.sampling import LocalPolicy, SamplingSettings

        self.name, self.api_key, self.delay = name, api_key, delay
        self.tokenizer = load_tokenizer(model_dir)
        self.model = load_model(model_dir, trainable=False)
        self._settings = SamplingSettings
        self._policy_class = LocalPolicy
        self._lock = threading.Lock()  # one generation at a time
        self._count_lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = [{"role": m["role"], "content": _text(m["content"])} for m in body["messages"]]
        prompt = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        settings = self._settings(max_new_tokens=int(body.get("max_tokens") or 16),
                                  temperature=float(body.get("temperature", 1.0)),
                                  top_p=float(body.get("top_p", 1.0)))
        with self._lock:
            policy = self._policy_class(self.model, self.tokenizer, settings, record=False)
            ids = self.tokenizer.encode(prompt, add_special_tokens=False)
            seeds = [int(body["seed"])] if body.get("seed") is not None else None  # OpenAI's seed, for reproducible samples
            response = policy.generate([ids], seeds=seeds)[0]
        text = self.tokenizer.decode(response, skip_special_tokens=True)
        return {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
            "model": self.name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop" if response and response[-1] in policy.stop_ids else "length"}],
            "usage": {"prompt_tokens": len(ids), "completion_tokens": len(response),
                      "total_tokens": len(ids) + len(response)},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _authorised(self) -> bool:
                if server.api_key is None or self.headers.get("Authorization") == f"Bearer {server.api_key}":
                    return True
                send_json(self, 401, {"error": {"message": "Invalid API key", "type": "invalid_request_error",
                                           "code": "invalid_api_key"}})
                return False

            def do_GET(self) -> None:
                if not self._authorised():
                    return
                if self.path.rstrip("/") == "/v1/models":
                    send_json(self, 200, {"object": "list", "data": [{"id": server.name, "object": "model",
                                                                  "created": 0, "owned_by": "test"}]})
                else:
                    send_json(self, 404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                if not self._authorised():
                    return
                if self.path.rstrip("/") != "/v1/chat/completions":
                    send_json(self, 404, {"error": {"message": "not found"}})
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if body.get("model") != server.name:
                    send_json(self, 404, {"error": {"message": f"model {body.get('model')!r} not found"}})
                    return
                with server._count_lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    server.requests.append(body)
                try:
                    time.sleep(server.delay)  # network and queueing latency, so requests overlap
                    send_json(self, 200, server.complete(body))
                finally:
                    with server._count_lock:
                        server.in_flight -= 1

        return Handler


def _text(content: str | list[dict[str, Any]]) -> str:
    """Message content as text for a text-only model: image parts become ``<image>``."""
    if isinstance(content, str):
        return content
    return "".join(part["text"] if part["type"] == "text" else "<image>" for part in content)

"""OpenAI-compatible servers for the tests, on localhost.

:class:`TransformersServer` is the real thing: ``transformers serve`` (the ``serve`` extra) with the
built-in SmolLM2-135M-Instruct, started offline in a process of its own; the ``smollm2_server``
fixture (tests/conftest.py) shares one per test session. :class:`StubChatServer` answers with what
a test decides, for the tests that need a fixed answer, a failure or a delay; it records every
request it gets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.helpers import free_port, send_json

#: What a stub answers a chat request with: the message text, or ``(status, payload)``.
Answer = str | tuple[int, dict[str, Any]]

#: Seconds the real server may take to answer /health after it starts.
START_TIMEOUT_S = 180


class TransformersServer:
    """``transformers serve MODEL_DIR`` on a free port, offline (no hub, no update check), until
    the ``with`` block ends. ``model`` is the id it serves (the folder); ``start_seconds`` how long
    it took to answer ``/health``."""

    def __init__(self, model_dir: Path):
        self.model = str(model_dir)
        self.port = free_port()
        self.start_seconds = 0.0
        self._log = tempfile.NamedTemporaryFile(prefix="transformers-serve-", suffix=".log", delete=False)
        self._process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def log(self) -> str:
        return Path(self._log.name).read_text(errors="replace")

    def __enter__(self) -> TransformersServer:
        environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                       "HF_HUB_DISABLE_UPDATE_CHECK": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
                       "OMP_WAIT_POLICY": "PASSIVE", "TOKENIZERS_PARALLELISM": "false"}
        command = [sys.executable, "-c", "from transformers.cli.transformers import main; main()",
                   "serve", self.model, "--host", "127.0.0.1", "--port", str(self.port), "--device", "cpu"]
        started = time.monotonic()
        self._process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, env=environment)
        try:
            while not self._healthy():
                if self._process.poll() is not None:
                    raise RuntimeError(f"transformers serve exited ({self._process.returncode}):\n{self.log()}")
                if time.monotonic() - started > START_TIMEOUT_S:
                    raise RuntimeError(f"transformers serve did not answer within {START_TIMEOUT_S} s:\n{self.log()}")
                time.sleep(0.2)
        except BaseException:
            self.__exit__()
            raise
        self.start_seconds = time.monotonic() - started
        return self

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def __exit__(self, *exc: object) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log.close()
        Path(self._log.name).unlink(missing_ok=True)


class StubChatServer:
    """A ``/v1/chat/completions`` server whose answer to each request is ``answer(body)`` (default:
    ``"SCORE: 10"``), after ``delay`` seconds, streamed when the request asks for it. ``requests`` holds every request body, in order; with
    ``api_key``, a request without that bearer key gets OpenAI's 401."""

    def __init__(self, answer: Callable[[dict[str, Any]], Answer] | None = None, *, delay: float = 0.0,
                 model: str = "stub-judge", api_key: str | None = None):
        self.answer = answer or (lambda body: "SCORE: 10")
        self.delay, self.model, self.api_key = delay, model, api_key
        self.requests: list[dict[str, Any]] = []
        self.in_flight = self.max_in_flight = 0  # requests being answered now, and the most at once
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> StubChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
            answer = self.answer(body)
        finally:
            with self._lock:
                self.in_flight -= 1
        if isinstance(answer, tuple):
            return answer
        return 200, {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
                     "model": body.get("model"),
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": answer}}],
                     "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _authorised(self) -> bool:
                if stub.api_key is None or self.headers.get("Authorization") == f"Bearer {stub.api_key}":
                    return True
                send_json(self, 401, {"error": {"message": "Invalid API key", "type": "invalid_request_error",
                                                "code": "invalid_api_key"}})
                return False

            def do_GET(self) -> None:
                if not self._authorised():
                    return
                if self.path.rstrip("/") == "/v1/models":
                    send_json(self, 200, {"object": "list", "data": [{"id": stub.model, "object": "model",
                                                                      "created": 0, "owned_by": "test"}]})
                else:
                    send_json(self, 404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                if not self._authorised():
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    send_json(self, 404, {"error": {"message": "not found"}})
                    return
                try:
                    status, payload = stub._respond(body)
                    if body.get("stream") and status == 200:
                        self._stream(payload)
                    else:
                        send_json(self, status, payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting

            def _stream(self, completion: dict[str, Any]) -> None:
                """``completion`` as server-sent chunks, as OpenAI streams (``"stream": true``)."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                head = {key: completion[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
                choice = completion["choices"][0]
                chunks = [{"choices": [{"index": 0, "delta": dict(choice["message"]), "finish_reason": None}]},
                          {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
                          {"choices": [], "usage": completion["usage"]}]
                for chunk in chunks:
                    self.wfile.write(b"data: " + json.dumps(head | chunk).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

        return Handler

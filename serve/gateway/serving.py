"""Building a gateway from ``gem gateway``'s options, and serving it (or any ASGI application)
in a thread of this process (what ``gem train`` does with its agent programs)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gem_core.errors import GemError
from gem_serve.gateway.backends import LocalBackend, VLLMBackend
from gem_serve.gateway.server import Gateway
from gem_serve.server import load

START_TIMEOUT_S = 60
#: Idle connections are kept longer than clients keep theirs (httpx and the OpenAI SDKs: 5 s, aiohttp:
#: 15 s), so that a client never sends a call on a connection the gateway is closing.
KEEP_ALIVE_S = 75


def load_tokenizer(name: str, chat_template: str | None = None) -> Any:
    """The tokenizer of ``name`` (``smollm2``, or a folder), with ``chat_template`` (a file) in place."""
    from gem_trainer.models import DEFAULT_MODEL, default_model_dir
    from gem_trainer.models import load_tokenizer as load

    if name == DEFAULT_MODEL:
        return load(default_model_dir(weights=False), chat_template=chat_template)
    if not Path(name).is_dir():
        raise GemError(f"No tokenizer folder {name!r}: pass --tokenizer with the folder of the model's tokenizer "
                       "(the gateway renders and tokenises the messages itself).")
    return load(Path(name), chat_template=chat_template)


def build_gateway(*, backend: str, backend_url: str | None, backend_key: str | None, model: str,
                  tokenizer: str | None, chat_template: str | None, tool_format: str, max_tokens: int,
                  temperature: float | None, retry_window: float, admin_token: str | None) -> Gateway:
    """A gateway as ``gem gateway`` makes it (the local model loaded, the backend not yet checked)."""
    sampling = {} if temperature is None else {"temperature": temperature}
    if backend == "local":
        from gem_trainer.decoding.sampling import LocalPolicy, SamplingSettings
        from gem_trainer.models import load_model, resolve_model

        folder = resolve_model(model)
        tokens = load_tokenizer(str(folder), chat_template)
        policy = LocalPolicy(load_model(folder, trainable=False), tokens,
                             SamplingSettings(max_new_tokens=max_tokens, max_prompt_tokens=32_768), record=False)
        engine: Any = LocalBackend(policy)
        name = model
    else:
        assert backend_url is not None
        tokens = load_tokenizer(tokenizer or model, chat_template)
        engine = VLLMBackend(backend_url, model, api_key=backend_key)
        name = model
    return Gateway(engine, tokens, model=name, max_tokens=max_tokens, sampling=sampling, tool_format=tool_format,
                   retry_window=retry_window, admin_token=admin_token)


def serve_gateway(*, host: str, port: int, log_level: str, announce: Callable[[str], None], **options: Any) -> None:
    """Check the backend, then serve until interrupted."""
    uvicorn = load("uvicorn", "gem gateway")
    load("starlette", "gem gateway")
    gateway = build_gateway(**options)
    asyncio.run(gateway.backend.check())
    try:
        sock = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as e:
        raise GemError(f"Cannot listen on {host}:{port}: {e}") from None
    shown = f"[{host}]" if ":" in host else host
    announce(f"http://{shown}:{sock.getsockname()[1]}")
    uvicorn.Server(uvicorn.Config(gateway.app(), log_level=log_level, lifespan="on",
                                  timeout_keep_alive=KEEP_ALIVE_S)).run(sockets=[sock])


@contextmanager
def served(app: Any, host: str = "127.0.0.1") -> Iterator[tuple[str, asyncio.AbstractEventLoop]]:
    """Serve the ASGI ``app`` with uvicorn in a thread until the block ends; yields its URL and
    the event loop it runs on (to run coroutines there)."""
    uvicorn = load("uvicorn", "gem gateway")
    sock = socket.create_server((host, 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_keep_alive=KEEP_ALIVE_S))
    loops: list[asyncio.AbstractEventLoop] = []

    def run() -> None:
        loop = asyncio.new_event_loop()
        loops.append(loop)
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.serve(sockets=[sock]))

    thread = threading.Thread(target=run, name="gem-gateway", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise GemError("The gateway's server did not start.")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{sock.getsockname()[1]}", loops[0]
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()

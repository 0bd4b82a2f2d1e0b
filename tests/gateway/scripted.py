"""A scripted backend that speaks vLLM's ``/v1/completions`` over HTTP: the prompt comes as token
ids, and the answer's ids are chosen by the test (``answer(prompt_ids) -> ids``). It returns
per-token ``logprobs`` as vLLM does with ``logprobs=0``, the tokens written as ids
(``"token_id:42"``) with ``return_tokens_as_token_ids``, and ``prompt_token_ids`` and
``token_ids`` with ``return_token_ids``, and records every call. Its log-probabilities are made up
from the ids (:func:`logprob`), so that a test can check they stay aligned with them.

``echo_prompt=False`` plays a server that does not return token ids (an OpenAI endpoint that is
not vLLM), and ``writes_ids=False`` one that does not write tokens as ids, which the gateway must
refuse at start."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.serve.servers import in_thread


def logprob(position: int, token: int) -> float:
    """The made-up log-probability of ``token`` sampled at ``position`` of an answer."""
    return -((token % 97) + position) / 100


@dataclass
class ScriptedBackend:
    answer: Callable[[list[int]], Sequence[int]]
    echo_prompt: bool = True
    writes_ids: bool = True
    delay: float = 0.0
    calls: list[tuple[list[int], list[int]]] = field(default_factory=list)
    bodies: list[dict] = field(default_factory=list)
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def app(self):
        import asyncio

        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def completions(request):
            body = json.loads(await request.body())
            prompt = list(body["prompt"])
            if self.delay:
                await asyncio.sleep(self.delay)
            check = prompt == [1, 2, 3, 4, 5] and body.get("max_tokens") == 1  # the gateway's start-up check
            ids = prompt[:1] if check else list(self.answer(prompt))[:body.get("max_tokens") or None]
            with self._lock:
                self.bodies.append(body)
                if not check:
                    self.calls.append((prompt, ids))
            written = [f"token_id:{t}" if self.writes_ids and body.get("return_tokens_as_token_ids") else f"t{t}" for t in ids]
            choice = {"index": 0, "text": "", "finish_reason": "length" if len(ids) == body.get("max_tokens") else "stop",
                      "logprobs": {"tokens": written, "token_logprobs": [logprob(k, t) for k, t in enumerate(ids)]},
                      "prompt_token_ids": None, "token_ids": None}
            if self.echo_prompt and body.get("return_token_ids"):
                choice.update(prompt_token_ids=prompt, token_ids=ids)
            return JSONResponse({"id": "cmpl-1", "object": "text_completion", "model": body.get("model"),
                                 "choices": [choice]})

        return Starlette(routes=[Route("/v1/completions", completions, methods=["POST"])])

    @contextmanager
    def serving(self) -> Iterator[ScriptedBackend]:
        with in_thread(self.app()) as url:
            self.url = url
            yield self

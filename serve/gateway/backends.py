"""Where the gateway's token ids are sampled: token ids in, token ids and their log-probabilities out.

* :class:`VLLMBackend`: vLLM's OpenAI server, through ``/v1/completions`` with the prompt as
  token ids, ``logprobs=0`` (the sampled ids' log-probabilities) and
  ``return_tokens_as_token_ids`` (each sampled token written as its id, ``"token_id:42"``).
  :meth:`~VLLMBackend.check` asks once at start, with ``return_token_ids``, that the server
  echoes the prompt ids it was given and writes the ids it sampled as tokens, and refuses a server
  that does not. Calls then leave out ``return_token_ids``, which would send the whole prompt's
  ids back with every answer.
* :class:`LocalBackend`: a local model through GEM's own decoder
  (:class:`~gem_trainer.decoding.sampling.LocalPolicy`), requests that arrive together sampled as
  one batch in a worker thread; log-probabilities come from one forward pass over each answer.

Any object with ``async generate(prompt_ids, sampling) -> Sampled`` and ``async check()`` is a
backend (tests use a scripted one over HTTP).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from gem_core.errors import GemError
from gem_serve.gateway.jsonio import json_bytes, read_json

logger = logging.getLogger("gem_serve")


@dataclass(frozen=True)
class Sampling:
    """How one call samples: the harness's request, within what the gateway allows."""

    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # further fields a backend passes on (penalties)


@dataclass(frozen=True)
class Sampled:
    """What a backend sampled: the ids (its stop token included when it wrote one), their
    log-probabilities (None when it gives none), why it stopped (``"stop"`` or ``"length"``), and
    what else it says of the call (``fields``: a trainer's weight versions), kept with the call."""

    ids: list[int]
    logprobs: list[float] | None
    finish_reason: str
    fields: dict[str, Any] = field(default_factory=dict)


class BackendError(GemError):
    """The backend failed a call (the harness gets HTTP 502)."""


class Backend(Protocol):
    async def generate(self, prompt_ids: list[int], sampling: Sampling) -> Sampled: ...

    async def check(self) -> None: ...


class VLLMBackend:
    """vLLM's OpenAI server at ``base_url`` (``http://host:port``, with or without ``/v1``)
    serving ``model``."""

    #: Sampling fields passed on to vLLM as the harness sent them.
    PASSED_ON = ("frequency_penalty", "presence_penalty", "repetition_penalty", "top_k", "min_p")

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, timeout: float = 600.0):
        root = base_url.rstrip("/")
        self.url = (root if root.endswith("/v1") else root + "/v1") + "/completions"
        self.model, self.timeout = model, timeout
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client: Any = None  # made on the event loop that first calls (an aiohttp session stays on its loop)

    async def generate(self, prompt_ids: list[int], sampling: Sampling) -> Sampled:
        body = {"model": self.model, "prompt": prompt_ids, "max_tokens": sampling.max_tokens,
                "temperature": sampling.temperature, "top_p": sampling.top_p, "logprobs": 0,
                "return_tokens_as_token_ids": True, "skip_special_tokens": False, "n": 1, "stream": False,
                **({"seed": sampling.seed} if sampling.seed is not None else {}),
                **{key: value for key, value in sampling.extra.items() if key in self.PASSED_ON}}
        answer = await self._post(body)
        choice = (answer.get("choices") or [{}])[0]
        found = _logprobs(choice)
        ids = sampled_ids(found.get("tokens"))
        if ids is None:
            raise BackendError(f"The backend at {self.url} did not write the sampled tokens as token ids: {NO_IDS}")
        logprobs = found.get("token_logprobs")
        if logprobs is not None and len(logprobs) != len(ids):
            raise BackendError(f"The backend returned {len(ids)} token ids but {len(logprobs)} log-probabilities.")
        return Sampled(ids, None if logprobs is None else [float(x) for x in logprobs],
                       "length" if choice.get("finish_reason") == "length" else "stop")

    async def check(self) -> None:
        """Refuse a server that does not echo the prompt ids it was given, or does not write the
        ids it sampled as tokens (not vLLM, or a vLLM too old for ``return_token_ids``)."""
        probe = [1, 2, 3, 4, 5]
        try:
            answer = await self._post({"model": self.model, "prompt": probe, "max_tokens": 1, "temperature": 0,
                                       "return_token_ids": True, "return_tokens_as_token_ids": True,
                                       "logprobs": 0})
        except BackendError as e:
            raise GemError(str(e)) from None
        finally:
            await self.aclose()  # the check may run on a loop of its own
        choice = (answer.get("choices") or [{}])[0]
        echoed = choice.get("prompt_token_ids", answer.get("prompt_token_ids"))
        if echoed is None or choice.get("token_ids") is None:
            raise GemError(f"The backend at {self.url} answered without prompt_token_ids and token_ids: {NO_IDS}")
        if list(echoed) != probe:
            raise GemError(f"The backend at {self.url} read the prompt ids {probe} as {list(echoed)[:12]}: it must "
                           "take the prompt as token ids unchanged (vLLM's /v1/completions does).")
        written = sampled_ids(_logprobs(choice).get("tokens"))
        if written != list(choice["token_ids"]):
            raise GemError(f"The backend at {self.url} sampled {list(choice['token_ids'])} but wrote its tokens as "
                           f"{written}: the gateway reads the sampled ids from the tokens written as ids "
                           "(vLLM's return_tokens_as_token_ids, vLLM 0.10.2 or later).")

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        import aiohttp  # several times less CPU per call than httpx's client, which was half the gateway's

        if self.client is None:
            self.client = aiohttp.ClientSession(headers={**self.headers, "Content-Type": "application/json"},
                                                timeout=aiohttp.ClientTimeout(total=self.timeout),
                                                connector=aiohttp.TCPConnector(limit=0))
        try:
            # orjson: a long prompt's ids in tens of microseconds, where json takes a millisecond
            async with self.client.post(self.url, data=json_bytes(body)) as response:
                status, raw = response.status, await response.read()
        except (aiohttp.ClientError, asyncio.TimeoutError) as e:
            raise BackendError(f"The backend at {self.url} did not answer: {type(e).__name__}: {e}") from None
        if status >= 400:
            text = raw.decode("utf-8", "replace")
            raise BackendError(f"The backend at {self.url} answered HTTP {status}: {text[:500]}") from None
        try:
            answer = read_json(raw)
        except ValueError:
            answer = None
        choices = (answer.get("choices") or []) if isinstance(answer, dict) else None
        if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
            raise BackendError(f"The backend at {self.url} answered something that is not a completion's JSON.")
        return answer

    async def aclose(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            await client.close()


def _logprobs(choice: dict[str, Any]) -> dict[str, Any]:
    """A completion choice's ``logprobs`` object (empty when it has none, or something else)."""
    found = choice.get("logprobs")
    return found if isinstance(found, dict) else {}


def sampled_ids(tokens: Any) -> list[int] | None:
    """The ids of tokens written as ``"token_id:42"`` (None when they are not)."""
    if not isinstance(tokens, list):
        return None
    ids = []
    for token in tokens:
        kind, _, number = token.partition(":") if isinstance(token, str) else ("", "", "")
        if kind != "token_id" or not number.isdigit():
            return None
        ids.append(int(number))
    return ids


NO_IDS = ("the gateway needs vLLM's OpenAI server (vLLM 0.10.2 or later, started with `vllm serve MODEL`), whose "
          "/v1/completions takes the prompt as token ids, returns them with `return_token_ids` and writes sampled "
          "tokens as ids with `return_tokens_as_token_ids`; for a local "
          "model use `gem gateway --backend local`.")


class LocalBackend:
    """A local transformers model sampled by GEM's decoder (``policy``: a
    :class:`~gem_trainer.decoding.sampling.LocalPolicy`). Requests that arrive while a batch is
    being sampled are sampled together next, up to the policy's batch size. ``lock`` (a
    ``threading.Lock``) is held while the model is used, so that a trainer can change the
    weights between batches."""

    def __init__(self, policy: Any, *, lock: threading.Lock | None = None):
        self.policy = policy
        self.lock = lock or threading.Lock()
        self._pending: list[tuple[list[int], Sampling, asyncio.Future]] = []
        self._running: asyncio.Task | None = None

    async def check(self) -> None:
        return None

    async def generate(self, prompt_ids: list[int], sampling: Sampling) -> Sampled:
        settings = self.policy.settings
        if sampling.extra:
            raise BackendError(f"The local backend does not sample with {', '.join(sorted(sampling.extra))}.")
        if len(prompt_ids) > settings.max_prompt_tokens:
            raise BackendError(f"The prompt has {len(prompt_ids)} tokens, more than the local backend's "
                               f"max_prompt_tokens ({settings.max_prompt_tokens}).")
        future = asyncio.get_running_loop().create_future()
        self._pending.append((prompt_ids, sampling, future))
        if self._running is None or self._running.done():
            self._running = asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            size = max(1, self.policy.settings.batch_size)
            batch, self._pending = self._pending[:size], self._pending[size:]
            try:
                results = await loop.run_in_executor(None, self._sample, [(ids, s) for ids, s, _ in batch])
            except Exception as e:  # noqa: BLE001 - the model failed: every caller of the batch hears it
                for *_, future in batch:
                    if not future.done():
                        future.set_exception(BackendError(f"The local model failed: {type(e).__name__}: {e}"))
                continue
            for (*_, future), result in zip(batch, results):
                if not future.done():
                    future.set_result(result)

    def _sample(self, requests: list[tuple[list[int], Sampling]]) -> list[Sampled]:
        """Sample ``requests`` (grouped by their sampling settings, which a batch shares)."""
        from dataclasses import replace

        results: list[Sampled | None] = [None] * len(requests)
        with self.lock:
            base = self.policy.settings
            groups: dict[tuple[int, float, float], list[int]] = {}
            for k, (_, sampling) in enumerate(requests):
                groups.setdefault((sampling.max_tokens, sampling.temperature, sampling.top_p), []).append(k)
            for (max_tokens, temperature, top_p), rows in groups.items():
                self.policy.settings = replace(base, max_new_tokens=max_tokens, temperature=temperature, top_p=top_p)
                try:
                    seeds = [requests[k][1].seed for k in rows]
                    outputs = self.policy.generate([requests[k][0] for k in rows],
                                                   seeds=seeds if all(s is not None for s in seeds) else None)
                finally:
                    self.policy.settings = base
                logprobs = answer_logprobs(self.policy.model, [requests[k][0] for k in rows], outputs)
                for k, ids, values in zip(rows, outputs, logprobs):
                    stopped = bool(ids) and ids[-1] in self.policy.stop_ids
                    results[k] = Sampled(list(ids), values, "stop" if stopped or len(ids) < max_tokens else "length")
        return results  # type: ignore[return-value]


def answer_logprobs(model: Any, prompts: list[list[int]], answers: list[list[int]]) -> list[list[float]]:
    """The log-probability of each answer id after its prompt, under ``model`` (one forward pass
    per answer)."""
    import torch

    device = next(model.parameters()).device
    found = []
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for prompt, answer in zip(prompts, answers):
                if not answer:
                    found.append([])
                    continue
                ids = torch.tensor([list(prompt) + list(answer)], dtype=torch.long, device=device)
                logits = model(input_ids=ids).logits[0, len(prompt) - 1:-1].float()
                chosen = torch.tensor(answer, dtype=torch.long, device=device)
                found.append(torch.log_softmax(logits, -1).gather(1, chosen[:, None])[:, 0].tolist())
    finally:
        model.train(was_training)
    return found

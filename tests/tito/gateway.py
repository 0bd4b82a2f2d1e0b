"""The gateway's path, for the suite: an agent program GEM does not run (a plain ``openai`` SDK
loop, observations as user messages) plays the echo environment through ``gem gateway``, whose
backend is the scripted sampler served over HTTP as vLLM serves (tests/gateway/scripted.py); the
episodes become training samples as ``gem train --agent`` makes them
(gem_trainer.training.agents)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from tests.tito.checks import Trained, runs


def text_agent(task) -> None:
    """Shows each observation as a user message and sends each answer to the environment, until
    the episode ends (or after ``GEM_TEST_TURNS`` answers, when set)."""
    import os

    import openai

    client = openai.OpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
    messages = [{"role": "user", "content": task.observation}]
    limit = int(os.environ.get("GEM_TEST_TURNS", "0")) or None
    turns = 0
    while True:
        answer = client.chat.completions.create(model=task.model, messages=messages).choices[0].message.content or ""
        result = task.step(answer)
        turns += 1
        if result.done or turns == limit:
            return
        messages += [{"role": "assistant", "content": answer}, {"role": "user", "content": result.observation}]


def play(tokenizer: Any, answer: Any, env_id: str, seeds: Sequence[int], agent: Any = text_agent):
    """Episodes of ``agent`` on ``env_id`` through a gateway whose backend answers with ``answer``."""
    from gem_core.registry import make
    from gem_serve.gateway.backends import VLLMBackend
    from gem_serve.gateway.runs import Harness, application, play_all
    from gem_serve.gateway.server import Gateway
    from gem_serve.gateway.serving import served
    from gem_serve.server import EnvServer
    from tests.gateway.scripted import ScriptedBackend

    backend = ScriptedBackend(answer)
    with backend.serving():
        gateway = Gateway(VLLMBackend(backend.url, "scripted"), tokenizer, max_tokens=64)
        server = EnvServer(lambda: make(env_id), env_id)
        with served(application(gateway, server)) as (url, loop):
            harness = Harness(gateway, server, url, timeout=120)
            return asyncio.run_coroutine_threadsafe(play_all(harness, agent, list(seeds)), loop).result(300)


def trained(episodes) -> list[Trained]:
    """What ``gem train --agent`` trains on, each turn's reward standing for its advantage."""
    from gem_trainer.training.agents import training_samples

    found = []
    for episode in episodes:
        samples, _, skipped = training_samples([episode], [episode.rewards])
        assert skipped == 0
        for sample in samples:
            ids = sample.prompt_ids + sample.completion_ids
            mask = [0] * len(sample.prompt_ids) + sample.mask
            values = [sample.advantages[start - len(sample.prompt_ids)] for start, _ in runs(mask)]
            found.append(Trained(episode.seed, ids, mask, values))
    return found

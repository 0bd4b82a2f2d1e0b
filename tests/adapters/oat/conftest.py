"""Fixtures for the oat adapter tests.

These run against the real oat (oat-llm 0.2.4) and deepspeed (0.16.8, oat's pin), installed the
way the docs tell users (see scripts/adapter_envs.py). The only stand-ins are import stand-ins
for vLLM and launchpad (:data:`STANDINS`), which oat imports at module level: vLLM needs a GPU and
launchpad ships for Python 3.10 only. Where oat's actor would ask its vLLM engine for completions,
a scripted engine answers in vLLM's output shape (:class:`ScriptedLLM`). SmolLM2's real tokenizer
tokenizes. oat's shared-memory transport between actor and learner is real: a plasma store from
pyarrow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("oat", reason="the oat adapter tests run in the oat test environment: bash scripts/test.sh")

from tests.adapters import standins  # noqa: E402
from tests.adapters.scripted import bisection  # noqa: E402
from tests.wrappers.conftest import smollm2_tokenizer, smollm2_tokenizer_dir  # noqa: E402,F401

#: What oat imports at module level without calling on the tested paths: vLLM (the actor's
#: engine) and launchpad (the program launcher, and oat's IPC server node).
STANDINS = ("vllm", "vllm.lora", "vllm.lora.request", "launchpad", "launchpad.nodes",
            "launchpad.nodes.python", "launchpad.nodes.python.local_multi_processing")
standins.install(STANDINS)

EASY = "game:GuessTheNumber-v0-easy"


@dataclass
class SamplingParams:
    """Stands in for ``vllm.SamplingParams``: the fields the actor sets, and ``clone``."""

    max_tokens: int
    n: int = 1
    logprobs: int = 1

    def clone(self) -> SamplingParams:
        return SamplingParams(self.max_tokens, self.n, self.logprobs)


@dataclass
class ScriptedLLM:
    """Stands in for the actor's ``vllm.LLM``: ``generate(prompt_token_ids=..., sampling_params=[...])``
    answers each prompt with ``answer(prompt text)``, tokenized plus ``<|im_end|>``, cut at
    ``max_tokens`` (finish reason "length"); token ``k`` of an answer has log-probability
    ``-(k + 1) / 100``. ``calls`` keeps the prompts of every call."""

    tokenizer: Any
    answer: Callable[[str], str] = bisection
    calls: list[list[list[int]]] = field(default_factory=list)
    #: In place of ``answer``: the prompt's ids -> the answer's token ids.
    script: Callable[[list[int]], list[int]] | None = None

    def generate(self, prompts=None, sampling_params=None, prompt_token_ids=None, lora_request=None,
                 use_tqdm=True):
        assert prompts is None and lora_request is None, "the actor generates from token ids, without LoRA"
        self.calls.append([list(ids) for ids in prompt_token_ids])
        end = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        outputs = []
        for ids, params in zip(prompt_token_ids, sampling_params):
            if self.script is not None:
                answer = self.script(list(ids))
            else:
                answer = self.tokenizer.encode(self.answer(self.tokenizer.decode(ids)), add_special_tokens=False) + [end]
            finish = "length" if len(answer) > params.max_tokens else "stop"
            answer = answer[:params.max_tokens]
            logprobs = [{token: SimpleNamespace(logprob=-(k + 1) / 100)} for k, token in enumerate(answer)]
            completion = SimpleNamespace(text=self.tokenizer.decode(answer, skip_special_tokens=True),
                                         token_ids=answer, logprobs=logprobs, finish_reason=finish)
            outputs.append(SimpleNamespace(prompt_token_ids=list(ids), outputs=[completion]))
        return outputs


def oat_args(*argv: str) -> Any:
    """The launcher's arguments, parsed by its real tyro command line."""
    from gem_adapters.oat.train import parse

    return parse(["--pretrain", "SmolLM2", *argv])


@pytest.fixture
def make_actor(smollm2_tokenizer):
    """``make_actor(*launcher flags)``: a GEM actor as oat's ``init`` leaves it, with the scripted
    engine in place of vLLM; closed after the test."""
    from gem_adapters.oat.rollout import GemOatActor

    actors = []

    def make(*argv: str, answer: Callable[[str], str] = bisection, tokenizer: Any = None,
             script: Callable[[list[int]], list[int]] | None = None) -> GemOatActor:
        args = oat_args(*argv)
        actor = GemOatActor(ipc_server=None, vllm_args={}, args=args)
        actor.tokenizer = tokenizer or smollm2_tokenizer
        actor.llm = ScriptedLLM(actor.tokenizer, answer, script=script)
        actor.use_lora_req = False
        actor.sampling_params = SamplingParams(max_tokens=args.generate_max_length)
        actor.setup_episodes()
        actors.append(actor)
        return actor

    yield make
    for actor in actors:
        if actor._vector is not None:
            actor._vector.close()


@pytest.fixture(scope="session")
def plasma_server():
    """oat's IPC server with a real plasma store behind it."""
    from oat.utils.ipc import PlasmaShmServer
    from pyarrow import plasma

    with plasma.start_plasma_store(plasma_store_memory=50 * 1000 * 1000) as (path, _process):
        server = PlasmaShmServer(size_mb=50)
        server._shm_path = path  # what the server node's run() sets once its store is up
        yield server

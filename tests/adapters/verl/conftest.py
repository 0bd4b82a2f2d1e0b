"""Fixtures for the verl adapter tests.

These tests run against the real verl installed the way the docs tell users (see
scripts/adapter_envs.py). Nothing here stands in for verl; the only stand-in is the model server:
a scripted ``generate`` with the signature of verl's server manager (token ids in, token ids out),
since serving a model needs a GPU.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verl", reason="the verl adapter tests run in the verl test environment: bash scripts/test.sh")

import gem_core  # noqa: E402

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


@pytest.fixture(scope="session")
def chat_tokenizer():
    """A small byte-level BPE tokenizer with a ChatML chat template, trained here on game text,
    as a real ``transformers`` tokenizer (no download)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = []
    for env_id in ("game:GuessTheNumber-v0-easy", "game:GuessTheNumber-v0-hard"):
        env = gem_core.make(env_id)
        observation, _ = env.reset(seed=0)
        corpus.append(observation)
        for guess in range(1, 30):
            corpus.append(env.step(f"\\boxed{{{guess}}}")[0])
    corpus += ["user assistant system", "I guess \\boxed{7}. higher lower Correct"] * 5
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>")
    fast.chat_template = CHATML
    return fast


class ScriptedServer:
    """Stands in for verl's server manager: ``generate`` takes prompt token ids and returns a
    ``TokenOutput`` whose token ids are the next scripted answer, tokenized, plus ``<|im_end|>``.

    ``answer`` is called with the decoded prompt and returns the text of the model's turn; or
    ``script`` with the prompt's ids, returning the turn's token ids.
    """

    def __init__(self, tokenizer: Any, answer: Callable[[str], str] | None = None, *, logprobs: bool = False,
                 script: Callable[[list[int]], list[int]] | None = None):
        self.tokenizer, self.answer, self.logprobs, self.script = tokenizer, answer, logprobs, script
        self.calls: list[dict[str, Any]] = []
        self.generated: list[list[int]] = []

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **kwargs: Any):
        from verl.workers.rollout.replica import TokenOutput

        await asyncio.sleep(0)
        self.calls.append({"request_id": request_id, "prompt_ids": list(prompt_ids),
                           "sampling_params": dict(sampling_params), "image_data": kwargs.get("image_data")})
        if self.script is not None:
            ids = self.script(list(prompt_ids))
        else:
            text = self.answer(self.tokenizer.decode(prompt_ids, skip_special_tokens=False))
            ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.eos_token_id]
        ids = ids[:sampling_params["max_tokens"]]
        self.generated.append(ids)
        log_probs = [-0.25 - 0.01 * i for i in range(len(ids))] if self.logprobs else None
        return TokenOutput(token_ids=ids, log_probs=log_probs, num_preempted=0,
                           extra_fields={"min_global_steps": 3, "max_global_steps": 3 + len(self.calls)})


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory, chat_tokenizer):
    """A model folder verl's launcher reads before its workers load weights: the tokenizer and a
    one-layer Qwen2 config."""
    from transformers import Qwen2Config

    folder = tmp_path_factory.mktemp("model")
    chat_tokenizer.save_pretrained(folder)
    Qwen2Config(vocab_size=len(chat_tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                num_attention_heads=2, num_key_value_heads=1, architectures=["Qwen2ForCausalLM"]).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def gem_estimators():
    """GEM's estimators must be registered for `gem verl config` to accept them."""
    from gem_core.registry import ESTIMATORS

    assert "rebn" in ESTIMATORS, "gem_core registers the rebn estimator"
    return ESTIMATORS


@pytest.fixture(scope="session")
def written_run(tmp_path_factory, gem_estimators):
    """A run written by the adapter for two GuessTheNumber variants."""
    from gem_adapters.verl.config import RunSettings, write_run

    settings = RunSettings(
        env_ids=("game:GuessTheNumber-v0-easy", "game:GuessTheNumber-v0-hard"),
        model="/models/tiny", out_dir=tmp_path_factory.mktemp("run"), train_size=12, val_size=4,
        batch_size=4, rollouts_per_start=2, prompt_length=256, response_length=512,
    )
    return write_run(settings)


def compose_config(config_path: Path, overrides: list[str] = ()) -> Any:
    """Compose a written config with Hydra, as verl's launcher does."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(config_path.parent), version_base=None):
        return compose(config_name=config_path.stem, overrides=list(overrides))


@pytest.fixture(scope="session")
def run_config(written_run):
    return compose_config(written_run.config)


def make_agent_loop(config: Any, server: Any, tokenizer: Any, *, hf_model_type: str | None = None,
                    processor: Any = None):
    """Instantiate the registered ``gem`` agent loop the way verl's agent-loop worker does.
    Call inside a running event loop."""
    import hydra
    from verl.experimental.agent_loop.agent_loop import (
        DictConfigWrap,
        ToolListWrap,
        _agent_loop_registry,
    )
    from verl.utils.dataset.rl_dataset import RLHFDataset

    return hydra.utils.instantiate(
        config=_agent_loop_registry["gem"],
        trainer_config=DictConfigWrap(config=config),
        server_manager=server,
        tokenizer=tokenizer,
        processor=processor,
        hf_model_type=hf_model_type,
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data),
        tools=ToolListWrap([]),
    )


def pytest_configure(config):
    # verl announces on import every optional training engine it cannot load (megatron, veomni...).
    config.addinivalue_line("filterwarnings", "ignore:.*engine is not available:UserWarning")

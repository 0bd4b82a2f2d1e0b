"""Checkpoints: the model (or its LoRA adapter), the tokenizer, the optimizer and the random state.

A run keeps its latest checkpoint in ``<output_dir>/checkpoint``::

    checkpoint/model/          save_pretrained folder (full weights, or the LoRA adapter), with
                               the tokenizer and trained_with.json (the settings it acted
                               with): `gem eval --model <it>` scores it directly, as it trained
    checkpoint/trainer.pt      step, optimizer state, torch random state

A new checkpoint is written next to the old one (``.checkpoint-writing``, marked complete last)
and swapped in through ``.checkpoint-previous``. A kill at any moment leaves a usable checkpoint:
if it struck during the swap, :func:`checkpoint_dir` finishes the swap (the new checkpoint, when
it was complete) or puts the previous one back.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gem_core.errors import GemError

CHECKPOINT = "checkpoint"
MODEL = "model"
STATE = "trainer.pt"
COMPLETE = ".complete"  # written last into a checkpoint being written
TRAINED_WITH = "trained_with.json"  # in the model folder: the settings below, as the run had them
#: The training settings that decide how the model acts on an environment; `gem eval` plays a
#: checkpoint with them unless told otherwise.
ACTING_SETTINGS = ("envs", "max_new_tokens", "temperature", "top_p", "wrappers")


@dataclass
class TrainerState:
    """What resuming needs besides the weights."""

    step: int
    optimizer: dict[str, Any]
    torch_rng: Any
    cuda_rng: Any = None


def save_checkpoint(output_dir: Path, model: Any, tokenizer: Any, state: TrainerState, *,
                    acting: dict[str, Any] | None = None) -> Path:
    """Write the checkpoint of ``output_dir`` and return its folder; ``acting``: the run's
    :data:`ACTING_SETTINGS`, kept beside the model."""
    import torch

    final = output_dir / CHECKPOINT
    staging = output_dir / f".{CHECKPOINT}-writing"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    model.save_pretrained(staging / MODEL)
    tokenizer.save_pretrained(staging / MODEL)
    if acting is not None:
        (staging / MODEL / TRAINED_WITH).write_text(json.dumps(acting, indent=2) + "\n")
    torch.save(
        {"step": state.step, "optimizer": state.optimizer, "torch_rng": state.torch_rng,
         "cuda_rng": state.cuda_rng},
        staging / STATE,
    )
    (staging / COMPLETE).write_text(f"{state.step}\n")
    previous = output_dir / f".{CHECKPOINT}-previous"
    shutil.rmtree(previous, ignore_errors=True)
    if final.exists():
        final.rename(previous)
    staging.rename(final)
    shutil.rmtree(previous, ignore_errors=True)
    return final


def recover(output_dir: Path) -> None:
    """Finish a checkpoint swap that a kill interrupted: with no ``checkpoint`` folder, a complete
    new checkpoint is moved in, or else the previous one is put back."""
    final = output_dir / CHECKPOINT
    if final.exists():
        return
    staging, previous = output_dir / f".{CHECKPOINT}-writing", output_dir / f".{CHECKPOINT}-previous"
    if (staging / COMPLETE).exists():
        staging.rename(final)
        shutil.rmtree(previous, ignore_errors=True)
    elif previous.exists():
        previous.rename(final)


def checkpoint_dir(output_dir: Path) -> Path:
    """The checkpoint folder of a run, checked to be complete (after :func:`recover`)."""
    recover(output_dir)
    folder = output_dir / CHECKPOINT
    if not (folder / STATE).exists() or not (folder / MODEL).is_dir():
        raise GemError(
            f"{str(output_dir)!r} has no complete checkpoint (expected {CHECKPOINT}/{STATE} and "
            f"{CHECKPOINT}/{MODEL}/). Pass the output folder of a `gem train` run that saved one."
        )
    return folder


def load_trainer_state(output_dir: Path) -> TrainerState:
    """The step, optimizer and random state saved in ``output_dir``'s checkpoint."""
    import torch

    data = torch.load(checkpoint_dir(output_dir) / STATE, map_location="cpu", weights_only=True)
    return TrainerState(data["step"], data["optimizer"], data["torch_rng"], data.get("cuda_rng"))


def trained_with(model_folder: Path) -> dict[str, Any]:
    """The :data:`ACTING_SETTINGS` a `gem train` checkpoint's model folder was trained with; {}
    for any other folder."""
    path = Path(model_folder).expanduser() / TRAINED_WITH
    if not path.is_file():
        return {}
    try:
        saved = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise GemError(f"{path} is not valid JSON ({e.msg}); delete it to evaluate with the default settings, "
                       "or restore it from the run's config.yaml.") from None
    if not isinstance(saved, dict):
        raise GemError(f"{path} must hold a mapping of settings, got {type(saved).__name__}.")
    return {key: saved[key] for key in ACTING_SETTINGS if key in saved}

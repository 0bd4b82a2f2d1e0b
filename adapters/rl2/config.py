"""Writes what RL2's own trainer needs to train on GEM environments: the datasets (one row per
environment id and seed, see :mod:`gem_adapters.common.dataset`) and the environment file for
``rollout.env_path``, and builds the launch command with RL2's Hydra overrides.

A row is ``{"extra_info": {"env_id": ..., "seed": ...}}``: no ``prompt``, so that RL2 calls the
environment file's ``reset``, which makes and resets the row's environment and returns its first
observation through the model's chat template.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gem_adapters.common import written
from gem_adapters.common.settings import RunSettings

ENV_FILE = "gem_env.py"
TRAIN_MODULE = "gem_adapters.rl2.train"
#: RL2's ``rollout.max_turns`` when no --max-turns is given: RL2 needs a number, and GEM's
#: environments end their episodes themselves well before it.
DEFAULT_MAX_TURNS = 32

ENV_TEMPLATE = '''\
"""RL2 environment for GEM environments, written by `gem rl2 config`.

Pass this file to RL2 as rollout.env_path. For each data row it plays the GEM environment and seed
named in the row's extra_info, with the options below, formatting turns with MODEL's chat template,
and gives RL2 each turn's reward (gem_adapters.rl2.rollout).
"""

try:
    from gem_adapters.rl2.rollout import environment
except ImportError as error:
    raise ImportError(
        "This RL2 environment file plays GEM environments and needs GEM where RL2 runs: "
        "pip install 'gem-adapters[rl2]' (see docs/adapters/rl2.md in GEM). "
        f"The import failed with: {{error}}"
    ) from error

MODEL = {model!r}
OPTIONS = {options!r}

_environment = environment(MODEL, OPTIONS)
reset, step = _environment.reset, _environment.step
'''


def dataset_row(env_id: str, seed: int, index: int, split: str, observation: str) -> dict[str, Any]:
    """One row as RL2's RLDataset reads it (``extra_info`` reaches the environment's ``reset``)."""
    return {"extra_info": {"env_id": env_id, "seed": seed}}


def env_file_text(settings: RunSettings) -> str:
    return ENV_TEMPLATE.format(model=settings.model, options=settings.options.to_config())


def max_turns(settings: RunSettings) -> int:
    return settings.options.max_turns or DEFAULT_MAX_TURNS


def hydra_value(value: Any) -> str:
    """``value`` as Hydra's override grammar reads it back as the same string: quoted unless it is
    a plain word or path."""
    text = str(value)
    if re.fullmatch(r"[A-Za-z/.][\w./:@-]*", text) and text.lower() not in ("true", "false", "null", "nan", "inf"):
        return text
    return "'" + text.replace("'", "\\'") + "'"


def overrides(settings: RunSettings, train: Path, val: Path, env_file: Path) -> list[str]:
    """RL2's Hydra overrides for the run (without GEM's ``gem.estimator``)."""
    max_new_tokens = settings.options.max_tokens_per_turn or settings.response_length
    return [
        f"train_data.path={hydra_value(train)}",
        f"train_data.prompts_per_rollout={settings.batch_size}",
        f"train_data.responses_per_prompt={settings.rollouts_per_start}",
        f"test_data.path={hydra_value(val)}",
        f"actor.model_name={hydra_value(settings.model)}",
        f"actor.lr={settings.learning_rate!r}",
        f"actor.max_length_per_device={settings.prompt_length + settings.response_length}",
        f"rollout.env_path={hydra_value(env_file)}",
        f"rollout.max_turns={max_turns(settings)}",
        f"rollout.train_sampling_params.max_new_tokens={max_new_tokens}",
        # the answers' text keeps their end-of-turn token, so the text between turns is exact
        "+rollout.train_sampling_params.skip_special_tokens=false",
        "+rollout.test_sampling_params.skip_special_tokens=false",
        f"adv.gamma={settings.gamma!r}",
        f"trainer.n_epochs={settings.epochs}",
        "trainer.project=gem",
        f"trainer.experiment_name={hydra_value(settings.out_dir.name or 'gem')}",
        f"trainer.save_dir={hydra_value(settings.out_dir.expanduser().resolve() / 'checkpoints')}",
    ]


def launch_argv(settings: RunSettings, train: Path, val: Path, env_file: Path) -> list[str]:
    """RL2's trainer through GEM's entry point, under torchrun."""
    return ["torchrun", f"--nnodes={settings.nodes}", f"--nproc_per_node={settings.gpus}",
            "-m", TRAIN_MODULE, *overrides(settings, train, val, env_file),
            f"gem.estimator={settings.estimator}"]


#: What RL2 reads: the datasets and the environment file, launched under torchrun.
RUN = written.FileRun("RL2", ENV_FILE, dataset_row, env_file_text, launch_argv)
check, write_run = RUN.check, RUN.write

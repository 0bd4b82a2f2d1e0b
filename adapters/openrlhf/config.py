"""Writes what OpenRLHF's own trainer needs to train on GEM environments: the prompt datasets (one
row per environment id and seed, see :mod:`gem_adapters.common.dataset`) and the agent file, and
builds the launch command with OpenRLHF's dotted flags.

A row is ``{"prompt": <first observation>, "label": <episode start as JSON>}``; the GEM agent makes
and resets the row's environment itself, and the prompt is there for OpenRLHF's logs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gem_adapters.common import written
from gem_adapters.common.launch import python_command
from gem_adapters.common.settings import RunSettings
from gem_adapters.openrlhf.labels import encode_label

AGENT_FILE = "gem_agent.py"
TRAIN_MODULE = "gem_adapters.openrlhf.train"

AGENT_TEMPLATE = '''\
"""OpenRLHF agent for GEM environments, written by `gem openrlhf config`.

Pass this file to OpenRLHF as --train.agent_func_path. For each prompt row it plays the GEM
environment and seed named in the row's label, with the options below, and returns the episode's
per-turn rewards in the sample's label for GEM's estimators (gem_adapters.openrlhf.rollout).
"""

try:
    from gem_adapters.openrlhf.rollout import agent_executor
except ImportError as error:
    raise ImportError(
        "This OpenRLHF agent file plays GEM environments and needs GEM wherever OpenRLHF's vLLM "
        "engines run: pip install 'gem-adapters[openrlhf]' there (see docs/adapters/openrlhf.md in "
        f"GEM). The import failed with: {{error}}"
    ) from error

OPTIONS = {options!r}

AgentExecutor = agent_executor(OPTIONS)
'''


def dataset_row(env_id: str, seed: int, index: int, split: str, observation: str) -> dict[str, Any]:
    """One row in the layout OpenRLHF's PromptDataset reads (``--data.input_key prompt
    --data.label_key label``)."""
    return {"prompt": observation, "label": encode_label(env_id, seed)}


def agent_file_text(settings: RunSettings) -> str:
    return AGENT_TEMPLATE.format(options=settings.options.to_config())


def launch_argv(settings: RunSettings, train: Path, val: Path, agent: Path) -> list[str]:
    """OpenRLHF's trainer through GEM's entry point, with OpenRLHF's dotted flags."""
    gpus, nodes = str(settings.gpus), str(settings.nodes)
    return python_command(
        "-m", TRAIN_MODULE,
        "--actor.model_name_or_path", settings.model,
        "--train.agent_func_path", str(agent),
        "--data.prompt_dataset", str(train),
        "--eval.dataset", str(val),
        "--data.input_key", "prompt",
        "--data.label_key", "label",
        "--data.apply_chat_template",
        "--data.max_len", str(settings.prompt_length + settings.response_length),
        "--rollout.batch_size", str(settings.batch_size),
        "--rollout.n_samples_per_prompt", str(settings.rollouts_per_start),
        "--train.batch_size", str(settings.batch_size * settings.rollouts_per_start),
        "--train.num_episodes", str(settings.epochs),
        "--train.seed", str(settings.seed),
        "--actor.adam.lr", repr(settings.learning_rate),
        "--algo.advantage.gamma", repr(settings.gamma),
        "--algo.kl.init_coef", "0",
        "--actor.num_nodes", nodes,
        "--actor.num_gpus_per_node", gpus,
        "--ref.num_nodes", nodes,
        "--ref.num_gpus_per_node", gpus,
        "--vllm.num_engines", str(settings.total_gpus),
        "--train.colocate_all",
        "--gem.estimator", settings.estimator,
    )


#: What OpenRLHF reads: the prompt datasets and the agent file, launched through GEM's entry point.
RUN = written.FileRun("OpenRLHF", AGENT_FILE, dataset_row, agent_file_text, launch_argv)
check, write_run = RUN.check, RUN.write

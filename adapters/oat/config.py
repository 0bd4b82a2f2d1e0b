"""``gem oat config``: the command that trains on GEM environments with oat, built from the shared
settings, and the checks oat needs on them. Nothing is written: the launcher makes the episode
starts from ``--env``, ``--seed`` and ``--train_size`` itself."""

from __future__ import annotations

from gem_adapters.common.launch import python_command
from gem_adapters.common.settings import RunSettings
from gem_core.errors import GemError

TRAIN_MODULE = "gem_adapters.oat.train"
#: The wrappers oat runs with when none are named: oat prompts each turn with its observation
#: alone, and this one renders the episode so far with the model's chat template.
DEFAULT_WRAPPERS = ("concat_chat",)


def check(settings: RunSettings) -> None:
    """Raise a :class:`GemError` for settings oat would reject or GEM cannot serve."""
    settings.check()
    if settings.nodes != 1:
        raise GemError("gem oat config writes a one-node command. For several nodes run it on each "
                       "node with oat's --num_groups N and --group_rank K added.")
    if settings.batch_size % settings.gpus:
        raise GemError(f"oat splits each step's episode starts evenly over its {settings.gpus} GPUs: "
                       f"make --batch-size ({settings.batch_size}) a multiple of --gpus.")


def launch_argv(settings: RunSettings) -> list[str]:
    """GEM's oat launcher with oat's flags (underscored, as oat's own scripts write them)."""
    per_gpu = settings.batch_size // settings.gpus
    options = settings.options
    argv = python_command(
        "-m", TRAIN_MODULE,
        "--pretrain", settings.model,
        "--save_path", str(settings.out_dir),
        "--env", *settings.env_ids,
        "--estimator", settings.estimator,
        "--gamma", repr(settings.gamma),
        "--wrappers", ",".join(options.wrappers or DEFAULT_WRAPPERS),
        "--train_size", str(settings.train_size),
        "--seed", str(settings.seed),
        "--num_samples", str(settings.rollouts_per_start),
        "--rollout_batch_size", str(settings.batch_size),
        "--rollout_batch_size_per_device", str(per_gpu),
        "--pi_buffer_maxlen_per_device", str(per_gpu),
        "--train_batch_size", str(settings.batch_size),
        "--train_batch_size_per_device", "1",
        "--generate_max_length", str(options.max_tokens_per_turn or settings.response_length),
        "--max_model_len", str(settings.prompt_length + settings.response_length),
        "--learning_rate", repr(settings.learning_rate),
        "--num_prompt_epoch", str(settings.epochs),
        "--gpus", str(settings.gpus),
        "--collocate",
    )
    if options.max_turns is not None:
        argv += ["--max_turns", str(options.max_turns)]
    if options.episode_deadline is not None:
        argv += ["--episode_deadline", repr(options.episode_deadline)]
    return argv

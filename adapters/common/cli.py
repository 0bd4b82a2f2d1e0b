"""What every ``gem <library> config`` command shares: its options, and what it prints.

A library's command stacks :func:`run_options` under its own ``@click.command`` and its own
options, builds its settings with :func:`settings_from_options`, writes its files under
:func:`writing_progress`, and ends with :func:`report_run`, which prints the files and, last on
stdout, the launch command.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from gem_adapters.common.options import EpisodeOptions, parse_deadline
from gem_adapters.common.settings import RunSettings

Settings = TypeVar("Settings", bound=RunSettings)


def run_options(library: str, default_out: str, *,
                without: Sequence[str] = ()) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The shared options of ``gem <library> config``; their values reach the command as keyword
    arguments named as :class:`RunSettings` fields, plus ``wrappers``, ``max_turns``,
    ``max_tokens_per_turn``, ``env_pool``, ``env_hosts`` and ``episode_deadline``. ``without``
    names the options a library has no use for (by their keyword; the settings keep their
    defaults)."""
    options = {  # keyword -> option
        "env_ids": click.option(
            "--env", "env_ids", multiple=True, required=True, metavar="ENV_ID",
            help="Environment to train on (repeat for several; rows alternate between them)."),
        "model": click.option("--model", required=True, help="Hugging Face model id or local path of the policy."),
        "out_dir": click.option(
            "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path(default_out),
            show_default=True, help="Folder for the files written."),
        "estimator": click.option(
            "--estimator", default="rebn", show_default=True,
            help=f"GEM advantage estimator (`gem plugins` lists them); named rebn or gem_<name> inside {library}."),
        "gamma": click.option("--gamma", type=float, default=0.9, show_default=True, help="Discount between turns."),
        "train_size": click.option("--train-size", type=int, default=8192, show_default=True,
                                   help="Training rows (episode starts)."),
        "val_size": click.option("--val-size", type=int, default=256, show_default=True, help="Validation rows."),
        "seed": click.option("--seed", type=int, default=0, show_default=True,
                             help="First seed; training rows use the next seeds, validation rows the ones after."),
        "batch_size": click.option("--batch-size", type=int, default=64, show_default=True,
                                   help="Episode starts per training step."),
        "rollouts_per_start": click.option(
            "--n", "rollouts_per_start", type=int, default=1, show_default=True,
            help="Episodes per start; group estimators such as grpo need 2 or more."),
        "prompt_length": click.option("--prompt-length", type=int, default=1024, show_default=True,
                                      help="Token budget of the first observation."),
        "response_length": click.option(
            "--response-length", type=int, default=2048, show_default=True,
            help="Token budget of the rest of an episode: all model turns and the observations between."),
        "learning_rate": click.option("--lr", "learning_rate", type=float, default=1e-6, show_default=True,
                                      help="Actor learning rate."),
        "epochs": click.option("--epochs", type=int, default=1, show_default=True,
                               help="Passes over the training rows."),
        "gpus": click.option("--gpus", type=int, default=1, show_default=True, help="GPUs per node."),
        "nodes": click.option("--nodes", type=int, default=1, show_default=True, help="Nodes."),
        "wrappers": click.option("--wrappers", default="", help="GEM wrappers for every environment, as a comma list."),
        "max_turns": click.option("--max-turns", type=int, default=None,
                                  help="Stop episodes after this many model turns."),
        "max_tokens_per_turn": click.option("--max-tokens-per-turn", type=int, default=None,
                                            help="Cap on one generation."),
        "env_pool": click.option(
            "--env-pool", metavar="ADDRESS", default=None,
            help="Play the environments on a Ray pool of environment hosts instead of in the rollout workers: "
                 "the Ray address ('auto': the cluster the trainer runs on). Nodes offer hosts through the "
                 "'gem_env' resource; needs gem-adapters[ray]."),
        "env_hosts": click.option("--env-hosts", type=int, default=None, metavar="N",
                                  help="Environment hosts of the pool (default 2 with --env-pool)."),
        "episode_deadline": click.option(
            "--episode-deadline", type=float, default=None, metavar="SECONDS",
            help="Wall clock an episode may take, environment and sampling together; past it the episode fails "
                 "(kind 'deadline'), is left out of training, and its environment is closed and replaced."),
    }
    chosen = [option for keyword, option in options.items() if keyword not in without]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(chosen):
            command = option(command)
        return command

    return decorate


def settings_from_options(cls: type[Settings], *, wrappers: str, max_turns: int | None,
                          max_tokens_per_turn: int | None, history_in_context: bool = True,
                          env_pool: str | None = None, env_hosts: int | None = None,
                          episode_deadline: float | None = None, **fields: Any) -> Settings:
    """Checked settings of class ``cls`` from the command's keyword arguments
    (``history_in_context`` as for :meth:`EpisodeOptions.from_config`)."""
    pool = None
    if env_pool is not None or env_hosts is not None:
        pool = {"address": env_pool, "hosts": 2 if env_hosts is None else env_hosts}
    parse_deadline(episode_deadline, "--episode-deadline")  # named as the option, not the key it becomes
    options = EpisodeOptions.from_config(
        {"wrappers": wrappers, "max_turns": max_turns, "max_tokens_per_turn": max_tokens_per_turn,
         "env_pool": pool, "episode_deadline": episode_deadline},
        history_in_context=history_in_context)
    settings = cls(options=options, **fields)
    settings.check()
    return settings


@contextmanager
def writing_progress(total: int, what: str = "writing datasets") -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr while files are written; yields ``update(count_done)``."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), console=Console(stderr=True),
                  transient=True) as bar:
        task = bar.add_task("rows", total=total)
        yield lambda count: bar.update(task, completed=count)


def report_run(files: Sequence[tuple[str, Path, str]], command: str, *, notes: Sequence[str] = ()) -> None:
    """Print what was written (label, path, detail) and notes on stderr, then the launch command
    as the last line of stdout."""
    from rich.console import Console

    console = Console(stderr=True, highlight=False)
    width = max(len(label) for label, _, _ in files) if files else 0
    for label, path, detail in files:
        console.print(f"{label:<{width}}  {path}" + (f" ({detail})" if detail else ""), soft_wrap=True)
    for note in notes:
        console.print(note, soft_wrap=True)
    console.print("Train with:", style="bold")
    click.echo(command)

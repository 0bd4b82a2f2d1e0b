"""``gem rl2``: prepare training on GEM environments with RL2's own trainer."""

from __future__ import annotations

import click

from gem_adapters.common.cli import run_options


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def rl2() -> None:
    """Train on GEM environments with RL2 (rl-square 0.0.2).

    `gem rl2 config` writes the datasets and the environment file (for rollout.env_path), and
    prints the command that trains with them: RL2's own PPO trainer with RL2's Hydra overrides,
    started through `torchrun -m gem_adapters.rl2.train`, whose one extra override
    gem.estimator=NAME puts a GEM advantage estimator in place of RL2's compute_advantages.
    """


@rl2.command("config")
@run_options("RL2", default_out="runs/rl2")
def config(**options: object) -> None:
    """Write RL2 datasets and the GEM environment file for GEM environments.

    Writes OUT/train.jsonl and OUT/val.jsonl (one row per environment id and seed, in the row's
    extra_info) and OUT/gem_env.py (for rollout.env_path), and prints the command that trains with
    them. Add or change RL2 overrides on that command as you would for torchrun -m
    RL2.trainer.ppo (e.g. trainer.test_freq=N to evaluate on val.jsonl).
    """
    from gem_adapters.common.cli import report_run, settings_from_options, writing_progress
    from gem_adapters.common.settings import RunSettings
    from gem_adapters.rl2.config import DEFAULT_MAX_TURNS, check, write_run

    settings = settings_from_options(RunSettings, **options)
    check(settings)
    with writing_progress(settings.train_size + settings.val_size) as progress:
        written = write_run(settings, progress=progress)
    notes = [f"longest first observation: {written.splits.longest_prompt} characters "
             f"(prompt budget: {settings.prompt_length} tokens)"]
    if settings.options.max_turns is None:
        notes.append(f"RL2 ends episodes after rollout.max_turns={DEFAULT_MAX_TURNS} turns (set --max-turns).")
    report_run(
        [("train", written.splits.train, f"{settings.train_size} rows"),
         ("val", written.splits.val, f"{settings.val_size} rows"),
         ("env file", written.file, "pass as rollout.env_path")],
        written.command,
        notes=notes,
    )

"""``gem openrlhf``: prepare training on GEM environments with OpenRLHF's own trainer."""

from __future__ import annotations

import click

from gem_adapters.common.cli import run_options


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def openrlhf() -> None:
    """Train on GEM environments with OpenRLHF.

    `gem openrlhf config` writes the prompt datasets and the agent file (for
    --train.agent_func_path), and prints the command that trains with them: OpenRLHF's own PPO
    trainer with OpenRLHF's flags, started through `python -m gem_adapters.openrlhf.train`, whose
    one extra flag --gem.estimator puts a GEM advantage estimator inside OpenRLHF's trainer.
    """


@openrlhf.command("config")
@run_options("OpenRLHF", default_out="runs/openrlhf")
def config(**options: object) -> None:
    """Write OpenRLHF prompt datasets and the GEM agent file for GEM environments.

    Writes OUT/train.jsonl and OUT/val.jsonl (one row per environment id and seed: the first
    observation as the prompt, the episode start as the label) and OUT/gem_agent.py (the
    AgentExecutor for --train.agent_func_path), and prints the command that trains with them.
    Add or change OpenRLHF flags on that command as you would for python -m
    openrlhf.cli.train_ppo_ray.
    """
    from gem_adapters.common.cli import report_run, settings_from_options, writing_progress
    from gem_adapters.common.settings import RunSettings
    from gem_adapters.openrlhf.config import check, write_run

    settings = settings_from_options(RunSettings, **options)
    check(settings)
    with writing_progress(settings.train_size + settings.val_size) as progress:
        written = write_run(settings, progress=progress)
    report_run(
        [("train", written.splits.train, f"{settings.train_size} rows"),
         ("val", written.splits.val, f"{settings.val_size} rows"),
         ("agent", written.file, "pass as --train.agent_func_path")],
        written.command,
        notes=[f"longest first observation: {written.splits.longest_prompt} characters "
               f"(prompt budget: {settings.prompt_length} tokens)"],
    )

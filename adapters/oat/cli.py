"""``gem oat``: prepare training on GEM environments with oat."""

from __future__ import annotations

import click

from gem_adapters.common.cli import run_options


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def oat() -> None:
    """Train on GEM environments with oat (oat-llm 0.2.4).

    `gem oat config` prints the command that trains: oat's multi-turn PPO started through
    `python -m gem_adapters.oat.train`, which takes oat's own flags plus GEM's (--env,
    --estimator, --wrappers, --max_turns, --episode_deadline, --train_size). Its actor plays GEM
    environments with oat's vLLM engine; its learner computes the GEM estimator's advantages.
    """


@oat.command("config")
@run_options("oat", default_out="runs/oat", without=("val_size", "env_pool", "env_hosts"))
def config(**options: object) -> None:
    """Print the oat command that trains on GEM environments.

    oat prompts each turn with its observation alone, so the wrappers default to concat_chat,
    which shows the model the episode so far through its chat template. Episode starts are
    made by the launcher (seeds from --seed on), so nothing is written; oat saves under OUT.
    oat runs no online evaluation here: evaluate its saved models with `gem eval`. Add or
    change oat flags on the printed command (e.g. --critic_type grpo, --beta 0.01).
    """
    from gem_adapters.common.cli import report_run, settings_from_options
    from gem_adapters.common.launch import command_line
    from gem_adapters.common.settings import RunSettings
    from gem_adapters.oat.config import check, launch_argv

    settings = settings_from_options(RunSettings, history_in_context=False, **options)
    check(settings)
    report_run([], command_line(launch_argv(settings)),
               notes=[f"{settings.train_size} episode starts, {settings.batch_size} per step, "
                      f"{settings.rollouts_per_start} episode(s) each; oat saves under {settings.out_dir}"])

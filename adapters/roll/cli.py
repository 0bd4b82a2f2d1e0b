"""``gem roll``: prepare training on GEM adapters' environments with ROLL's own launcher."""

from __future__ import annotations

from pathlib import Path

import click

from gem_adapters.common.cli import run_options


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def roll() -> None:
    """Train on GEM environments with ROLL.

    `gem roll config` writes a ROLL config and prints ROLL's launch command (python
    examples/start_agentic_pipeline.py ...). ROLL's own env managers play GEM adapters'
    environments under the ids gem_adapters/<id>, and GEM's estimators replace ROLL's
    step_reinforce normalisation through a pipeline_cls of GEM's.
    """


@roll.command("config")
@run_options("ROLL", default_out="runs/roll")
@click.option("--env-manager", type=click.Choice(["step_concat", "step"]), default="step_concat",
              show_default=True, help="ROLL's env manager: StepConcatEnvManager (the observations so far "
                                      "in each prompt) or StepEnvManager (the task and the current one).")
@click.option("--roll-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="The ROLL checkout the launch command runs in.")
@click.option("--roll-normalisation", "native_normalisation", is_flag=True,
              help="Keep ROLL's own step_reinforce normalisation (unbiased std) instead of GEM's exact "
                   "ReBN (population std).")
def config(**options: object) -> None:
    """Write a ROLL config for GEM environments.

    Writes OUT/gem_roll.yaml: ROLL's agentic pipeline with adv_estimator step_reinforce, batch
    normalisation, one env tag per --env, and pipeline_cls gem_adapters.roll.pipeline.<estimator>
    (GEM's exact estimator). Prints the command that trains with it, run in the ROLL checkout.
    """
    from gem_adapters.common.cli import report_run, settings_from_options
    from gem_adapters.roll.config import RunSettings, write_run

    settings = settings_from_options(RunSettings, **options)
    written = write_run(settings)
    report_run([("config", written.config, f"{len(settings.env_ids)} env tag(s)")], written.command,
               notes=[f"run it in the ROLL checkout {settings.roll_dir.expanduser().resolve()}"])

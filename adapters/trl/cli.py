"""``gem trl``: prepare training on GEM environments with TRL's GRPOTrainer."""

from __future__ import annotations

import click
from click.core import ParameterSource

from gem_adapters.common.cli import run_options
from gem_adapters.trl.train import FACTORY, MODES, ROLLOUT


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def trl() -> None:
    """Train on GEM environments with TRL's GRPOTrainer.

    `gem trl config` writes the datasets and a TRL config, and prints the command that trains with
    them: `python -m gem_adapters.trl.train --config FILE` (under `accelerate launch` for several
    GPUs). Two paths (--mode): `rollout` (the default; trl 1.16) plays GEM episodes turn by turn
    in GEM's rollout and takes its advantages per turn from a GEM estimator (--estimator trl keeps
    TRL's own); `factory` (trl 0.29 to 1.16) hands GEM's environments to TRL's stock GRPOTrainer
    as its environment_factory: TRL's tool loop plays them, with TRL's group advantage of each
    episode's return.
    """


@trl.command("config")
@run_options("TRL", default_out="runs/trl", without=("rollouts_per_start", "prompt_length"))
@click.option("--n", "rollouts_per_start", type=int, default=4, show_default=True,
              help="Episodes per start (TRL's num_generations, at least 2).")
@click.option("--cpu", is_flag=True, help="Train on the CPU (TRL's use_cpu; no bf16).")
@click.option("--mode", type=click.Choice(MODES), default=ROLLOUT, show_default=True,
              help="rollout: GEM's rollout and per-turn advantages (GemGRPOTrainer, trl 1.16); factory: TRL's "
                   "stock GRPOTrainer with GEM's environment_factory and TRL's group advantage (trl 0.29-1.16).")
@click.pass_context
def config(context: click.Context, **options: object) -> None:
    """Write TRL datasets and a TRL config for GEM environments.

    Writes OUT/train.jsonl and OUT/val.jsonl (one row per environment id and seed) and
    OUT/gem_trl.yaml (GRPOConfig's keys and GEM's gem_* keys), and prints the command that trains
    with them. --estimator takes a GEM estimator or `trl` (TRL's group advantage, unchanged);
    --max-tokens-per-turn becomes TRL's max_completion_length (default: --response-length), and
    --response-length bounds a whole episode. With --mode factory the advantage is TRL's (no
    --estimator) and --response-length is TRL's max_completion_length, the whole episode after
    its prompt. Override any key on the command: --key value.
    """
    from gem_adapters.common.cli import report_run, settings_from_options, writing_progress
    from gem_adapters.trl import TRL_ESTIMATOR
    from gem_adapters.trl.config import RunSettings, write_run

    if options["mode"] == FACTORY:
        if context.get_parameter_source("gamma") is not ParameterSource.DEFAULT:
            raise click.UsageError("--gamma applies to --mode rollout: the factory mode's advantage is TRL's, "
                                   "from each episode's undiscounted return.")
        if context.get_parameter_source("estimator") is ParameterSource.DEFAULT:
            options["estimator"] = TRL_ESTIMATOR  # the factory mode's only advantage
    settings = settings_from_options(RunSettings, **options)
    with writing_progress(settings.train_size + settings.val_size) as progress:
        written = write_run(settings, progress=progress)
    report_run(
        [("config", written.file, ""),
         ("train", written.splits.train, f"{settings.train_size} rows"),
         ("val", written.splits.val, f"{settings.val_size} rows")],
        written.command,
        notes=[f"longest first observation: {written.splits.longest_prompt} characters"],
    )

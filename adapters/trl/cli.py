"""``gem trl``: prepare training on GEM environments with TRL's GRPOTrainer."""

from __future__ import annotations

import click

from gem_adapters.common.cli import run_options


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def trl() -> None:
    """Train on GEM environments with TRL (trl 1.16).

    `gem trl config` writes the datasets and a TRL config, and prints the command that trains with
    them: TRL's own GRPOTrainer, started through `python -m gem_adapters.trl.train --config FILE`
    (under `accelerate launch` for several GPUs), whose rollout plays GEM episodes turn by turn
    and whose advantages come from a GEM estimator (--estimator trl keeps TRL's own).
    """


@trl.command("config")
@run_options("TRL", default_out="runs/trl", without=("rollouts_per_start", "prompt_length"))
@click.option("--n", "rollouts_per_start", type=int, default=4, show_default=True,
              help="Episodes per start (TRL's num_generations, at least 2).")
@click.option("--cpu", is_flag=True, help="Train on the CPU (TRL's use_cpu; no bf16).")
def config(**options: object) -> None:
    """Write TRL datasets and a TRL config for GEM environments.

    Writes OUT/train.jsonl and OUT/val.jsonl (one row per environment id and seed) and
    OUT/gem_trl.yaml (GRPOConfig's keys and GEM's gem_* keys), and prints the command that trains
    with them. --estimator takes a GEM estimator or `trl` (TRL's group advantage, unchanged);
    --max-tokens-per-turn becomes TRL's max_completion_length (default: --response-length), and
    --response-length bounds a whole episode. Override any key on the command: --key value.
    """
    from gem_adapters.common.cli import report_run, settings_from_options, writing_progress
    from gem_adapters.trl.config import RunSettings, write_run

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

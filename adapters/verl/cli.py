"""``gem verl``: prepare training on GEM environments with verl's own launcher."""

from __future__ import annotations

from pathlib import Path

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def verl() -> None:
    """Train on GEM environments with verl.

    `gem verl config` writes a verl config and its datasets, and prints the native command
    (python -m verl.trainer.main_ppo ...) that trains with them. verl finds GEM's `gem` agent loop
    and its advantage estimators (`rebn`, `gem_<name>`) through its plugin entry point.
    """


@verl.command("config")
@click.option("--env", "env_ids", multiple=True, required=True, metavar="ENV_ID",
              help="Environment to train on (repeat for several; rows alternate between them).")
@click.option("--model", required=True, help="Hugging Face model id or local path of the policy.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs/verl"),
              show_default=True, help="Folder for the config and the datasets.")
@click.option("--estimator", default="rebn", show_default=True,
              help="GEM advantage estimator (`gem plugins` lists them); named rebn or gem_<name> in verl.")
@click.option("--gamma", type=float, default=0.9, show_default=True, help="Discount between turns.")
@click.option("--train-size", type=int, default=8192, show_default=True, help="Training rows (episode starts).")
@click.option("--val-size", type=int, default=256, show_default=True, help="Validation rows.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="First seed; training rows use the next seeds, validation rows the ones after.")
@click.option("--batch-size", type=int, default=64, show_default=True, help="Episode starts per training step.")
@click.option("--n", "rollouts_per_start", type=int, default=1, show_default=True,
              help="Episodes per start (verl's rollout.n); group estimators such as grpo need 2 or more.")
@click.option("--prompt-length", type=int, default=1024, show_default=True,
              help="Token budget of the first observation.")
@click.option("--response-length", type=int, default=2048, show_default=True,
              help="Token budget of the rest of an episode: all model turns and the observations between.")
@click.option("--lr", "learning_rate", type=float, default=1e-6, show_default=True, help="Actor learning rate.")
@click.option("--epochs", type=int, default=1, show_default=True, help="Passes over the training rows.")
@click.option("--gpus", type=int, default=1, show_default=True, help="GPUs per node.")
@click.option("--nodes", type=int, default=1, show_default=True, help="Nodes.")
@click.option("--rollout", "rollout_engine", type=click.Choice(["vllm", "sglang"]), default="vllm",
              show_default=True, help="verl's rollout engine.")
@click.option("--wrappers", default="", help="GEM wrappers for every environment, as a comma list.")
@click.option("--max-turns", type=int, default=None, help="Stop episodes after this many model turns.")
@click.option("--max-tokens-per-turn", type=int, default=None, help="Cap on one generation.")
def config(env_ids: tuple[str, ...], out_dir: Path, wrappers: str, max_turns: int | None,
           max_tokens_per_turn: int | None, **settings: object) -> None:
    """Write a verl config and its datasets for GEM environments.

    Writes OUT/gem_verl.yaml (verl's packaged defaults plus GEM's settings), OUT/train.jsonl and
    OUT/val.jsonl (one row per environment id and seed), and prints the command that trains with
    them. Add verl overrides to that command as key=value.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from gem_adapters.verl.config import RunSettings, write_run
    from gem_adapters.verl.options import AgentLoopOptions

    options = AgentLoopOptions.from_config(
        {"wrappers": wrappers, "max_turns": max_turns, "max_tokens_per_turn": max_tokens_per_turn})
    run_settings = RunSettings(env_ids=env_ids, out_dir=out_dir, options=options, **settings)  # type: ignore[arg-type]
    run_settings.check()
    console = Console(stderr=True)
    rows = run_settings.train_size + run_settings.val_size
    with Progress(TextColumn("writing datasets"), BarColumn(), MofNCompleteColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("rows", total=rows)
        written = write_run(run_settings, progress=lambda count: bar.update(task, completed=count))
    console.print(f"config    {written.config}")
    console.print(f"train     {written.train} ({run_settings.train_size} rows)")
    console.print(f"val       {written.val} ({run_settings.val_size} rows)")
    console.print(f"longest first observation: {written.longest_prompt} characters "
                  f"(prompt budget: {run_settings.prompt_length} tokens)")
    console.print("Train with:", style="bold")
    click.echo(written.command)

"""``python bench/train_default.py``: does ``gem train`` with no arguments show an agent learning?

Runs the embedded default (``gem train``, the command a new user runs first) once per seed, each
in a process of its own, and reports per seed:

* the success rate and the share of format errors at every step, and whether the run learned:
  success over the last two steps at least 0.3 and at least twice that of the first two, with
  fewer format errors at the end than at the start;
* the wall time of the whole command, and tokens per second for sampling and for training.

Then it measures, with the same model on this machine, the limits those rates approach: a bare
batched ``generate`` (the default batch of prompts, the default response length, every row
generating to the end) and a bare forward and backward pass of LoRA training over the same
sequences. Figures go to the terminal, ``summary.json``, ``curves.csv`` and ``train_default.png``
(the seeds' success and format-error curves) under ``--out``.

Any other option is passed on to ``gem train`` (``--lr 2e-3``, ``--steps 10``, ...), to try
settings the same way.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "train-default"


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog="python bench/train_default.py", description=__doc__.split("\n\n")[0],
                                     epilog="Other options go to `gem train` unchanged.")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds (default 0 1 2)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare generate and forward/backward figures")
    return parser.parse_known_args(argv)


def train(seed: int, folder: Path, extra: list[str]) -> dict[str, Any]:
    """One ``gem train`` run as a user runs it; its per-step records and wall time."""
    command = ["gem", "train", "--seed", str(seed), "--output-dir", str(folder), *extra]
    print(f"== seed {seed}: {' '.join(command)}", flush=True)
    started = time.perf_counter()
    finished = subprocess.run(command, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    seconds = time.perf_counter() - started
    if finished.returncode:
        raise SystemExit(f"gem train failed for seed {seed} (exit {finished.returncode}).")
    records = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return {"seed": seed, "wall_seconds": seconds, "records": records, **verdict(records)}


def verdict(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The learning criteria on one run's records."""
    def mean(key: str, part: list[dict[str, Any]]) -> float:
        return sum(r[key] for r in part) / len(part)

    first, last = records[:2], records[-2:]
    success_first, success_last = mean("success_rate", first), mean("success_rate", last)
    errors_first, errors_last = mean("format_error_rate", first), mean("format_error_rate", last)
    return {
        "success_first_two": success_first, "success_last_two": success_last,
        "format_errors_first_two": errors_first, "format_errors_last_two": errors_last,
        "learned": success_last >= 0.3 and success_last >= 2 * success_first and errors_last < errors_first,
        "sampling_tokens_per_second": _weighted(records, "tokens_per_second", "rollout_seconds"),
        "training_tokens_per_second": _weighted(records, "train_tokens_per_second", "train_seconds"),
    }


def _weighted(records: list[dict[str, Any]], rate: str, seconds: str) -> float:
    """A rate over the whole run: each step's rate weighted by its time."""
    total = sum(r[seconds] for r in records)
    return sum(r[rate] * r[seconds] for r in records) / total if total else 0.0


def bare_figures(extra: list[str]) -> dict[str, float]:
    """Tokens per second of a bare batched generate and a bare LoRA forward+backward with the
    default model, batch and lengths (the settings ``gem train`` would use with ``extra``)."""
    from gem_trainer.runtime import prefer_passive_openmp

    prefer_passive_openmp()
    import torch

    import gem_core
    from gem_trainer.cli import train as train_command
    from gem_trainer.cli import train_config
    from gem_trainer.models import LoraSettings, load_model, load_tokenizer, resolve_model

    flags = dict(train_command.make_context("gem train", list(extra)).params)
    config = train_config(flags.pop("config_file"), flags.pop("resume"),
                          {k: v for k, v in flags.items() if k != "progress"})
    folder = resolve_model(config.model)
    tokenizer = load_tokenizer(folder)
    env = gem_core.make_vec([config.envs[0]] * config.episodes_per_step, wrappers=config.wrappers,
                            wrapper_options={"tokenizer": tokenizer})
    observations, _ = env.reset(seed=config.seed)
    env.close()
    prompts = [tokenizer.encode(o, add_special_tokens=False) for o in observations]
    width = max(map(len, prompts))
    ids = torch.full((len(prompts), width), tokenizer.pad_token_id)
    mask = torch.zeros_like(ids)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt):], mask[row, width - len(prompt):] = torch.tensor(prompt), 1

    model = load_model(folder, trainable=False).eval()
    new = config.max_new_tokens
    with torch.inference_mode():
        model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=2, do_sample=True, top_k=0,
                       pad_token_id=tokenizer.pad_token_id)  # warm-up
        started = time.perf_counter()
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new, min_new_tokens=new,
                             do_sample=True, temperature=config.temperature, top_k=0,
                             pad_token_id=tokenizer.pad_token_id)
        generate_seconds = time.perf_counter() - started

    lora = load_model(folder, lora=LoraSettings(rank=config.lora_rank, alpha=config.lora_alpha)).train()
    sequences, sequence_mask = out, torch.cat([mask, torch.ones(len(prompts), new, dtype=mask.dtype)], dim=1)
    passes = []
    for _ in range(2):  # the second pass is the figure: the first warms the allocator
        started = time.perf_counter()
        logits = lora(input_ids=sequences, attention_mask=sequence_mask, logits_to_keep=new + 1).logits
        torch.log_softmax(logits.float(), dim=-1).amax(-1).sum().backward()
        passes.append(time.perf_counter() - started)
    return {
        "generate_tokens_per_second": len(prompts) * new / generate_seconds,
        "forward_backward_tokens_per_second": int(sequence_mask.sum()) / passes[-1],
        "batch": len(prompts), "prompt_tokens": width, "new_tokens": new,
    }


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, (success, errors) = plt.subplots(1, 2, figsize=(11, 4), sharex=True)
    for run in runs:
        steps = [r["step"] for r in run["records"]]
        label = f"seed {run['seed']} ({run['wall_seconds'] / 60:.1f} min)"
        success.plot(steps, [r["success_rate"] for r in run["records"]], marker="o", markersize=3, label=label)
        errors.plot(steps, [r["format_error_rate"] for r in run["records"]], marker="o", markersize=3, label=label)
    success.axhline(0.3, color="grey", linestyle="--", linewidth=0.8)
    success.set_title("success rate")
    errors.set_title("format errors (share of episodes)")
    for ax in (success, errors):
        ax.set_xlabel("step")
        ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=8)
    fig.suptitle("gem train, embedded default, one run per seed")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_csv(runs: list[dict[str, Any]], path: Path) -> None:
    columns = ["step", "success_rate", "format_error_rate", "mean_return", "turns_per_episode",
               "tokens_per_second", "train_tokens_per_second", "rollout_seconds", "train_seconds"]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["seed", *columns])
        for run in runs:
            for record in run["records"]:
                writer.writerow([run["seed"], *(record.get(c) for c in columns)])


def report(runs: list[dict[str, Any]], bare: dict[str, float] | None) -> None:
    from rich.table import Table

    from gem_core.cli.output import console

    table = Table(title="gem train, embedded default")
    for column in ("seed", "wall", "success first 2 / last 2", "format errors first 2 / last 2",
                   "sampling tok/s", "training tok/s", "learned"):
        table.add_column(column, justify="right")
    for run in runs:
        table.add_row(str(run["seed"]), f"{run['wall_seconds'] / 60:.1f} min",
                      f"{run['success_first_two']:.2f} / {run['success_last_two']:.2f}",
                      f"{run['format_errors_first_two']:.2f} / {run['format_errors_last_two']:.2f}",
                      f"{run['sampling_tokens_per_second']:.0f}", f"{run['training_tokens_per_second']:.0f}",
                      "yes" if run["learned"] else "no")
    out = console()
    out.print(table)
    for run in runs:
        out.print(f"seed {run['seed']} success per step: "
                  + " ".join(f"{r['success_rate']:.2f}" for r in run["records"]))
    if bare:
        out.print(f"Bare limits with the same model, batch {bare['batch']} x {bare['prompt_tokens']} prompt tokens: "
                  f"generate {bare['generate_tokens_per_second']:.0f} tok/s ({bare['new_tokens']} new tokens per row), "
                  f"LoRA forward+backward {bare['forward_backward_tokens_per_second']:.0f} tok/s.")


def main(argv: list[str] | None = None) -> int:
    args, extra = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    runs = [train(seed, args.out / f"seed-{seed}", extra) for seed in args.seeds]
    bare = None if args.no_bare else bare_figures(extra)
    summary = {"command": ["gem", "train", *extra], "seeds": args.seeds, "bare": bare,
               "all_learned": all(run["learned"] for run in runs),
               "runs": [{k: v for k, v in run.items() if k != "records"} for run in runs]}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    write_csv(runs, args.out / "curves.csv")
    plot(runs, args.out / "train_default.png")
    report(runs, bare)
    print(f"Results: {args.out / 'summary.json'}, {args.out / 'curves.csv'}, {args.out / 'train_default.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

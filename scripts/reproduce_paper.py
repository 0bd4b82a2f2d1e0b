"""Reproduce two claims of the GEM paper at small scale with the built-in trainer.

1. ReBN beats vanilla REINFORCE: success rate over training steps on an easy game
   (game:GuessTheNumber-v0-easy), same model, seeds and settings, only the estimator differs.
2. A discount below 1 makes agents finish sooner: turns per episode on GuessTheNumber
   (game:GuessTheNumber-v0, 1-20 in up to 20 turns) with gamma 0.9 versus 0.999, ReBN both times.

Every run is `gem train` (the same Trainer class) with SmolLM2-135M-Instruct by default. The
``cpu`` preset is a reduced run that fits in about a quarter of an hour on a 2-core machine: too
few steps for firm conclusions, but every curve is real. The ``gpu`` preset is the meaningful one.

    python scripts/reproduce_paper.py                      # the preset for this machine
    python scripts/reproduce_paper.py --preset gpu --seeds 0 1 2
    python scripts/reproduce_paper.py --preset vision --model ~/models/SmolVLM-256M-Instruct

The ``vision`` preset trains a vision-language model (a local folder saved with its processor)
with ReBN on a generated visual task (vision:Geometry-v0), at the ``gpu`` preset's size.

It prints a table (mean of the last steps of each run) and writes, under --out, the metrics of
every run, ``claims.json``, ``claims.csv`` and ``claims.png``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path
from typing import Any

from gem_adapters.local.runtime import prefer_passive_openmp

PRESETS: dict[str, dict[str, Any]] = {
    "cpu": {"steps": 4, "episodes_per_step": 16, "max_new_tokens": 16, "max_prompt_tokens": 768},
    "gpu": {"steps": 40, "episodes_per_step": 64, "max_new_tokens": 256, "max_prompt_tokens": 2048},
    "vision": {"steps": 40, "episodes_per_step": 64, "max_new_tokens": 256, "max_prompt_tokens": 2048},
}
VISUAL_TASK = "vision:Geometry-v0"
EASY_GAME = "game:GuessTheNumber-v0-easy"
GAMMA_GAME = "game:GuessTheNumber-v0"

#: experiment -> (environment, metric, {run label: settings})
EXPERIMENTS: dict[str, tuple[str, str, dict[str, dict[str, Any]]]] = {
    "rebn_vs_reinforce": (EASY_GAME, "success_rate", {
        "ReBN": {"estimator": "rebn", "gamma": 0.9},
        "REINFORCE": {"estimator": "reinforce", "gamma": 0.9},
    }),
    "gamma": (GAMMA_GAME, "turns_per_episode", {
        "gamma 0.9": {"estimator": "rebn", "gamma": 0.9},
        "gamma 0.999": {"estimator": "rebn", "gamma": 0.999},
    }),
    "vision": (VISUAL_TASK, "success_rate", {
        "ReBN": {"estimator": "rebn", "gamma": 0.9},
    }),
}
#: What each preset runs unless --only says otherwise.
PRESET_EXPERIMENTS = {"cpu": ("rebn_vs_reinforce", "gamma"), "gpu": ("rebn_vs_reinforce", "gamma"),
                      "vision": ("vision",)}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default=None,
                        help="Run size (default: gpu when a CUDA GPU is visible, else cpu).")
    parser.add_argument("--model", default="smollm2", help="Model folder, or smollm2 (default).")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="Training seeds; curves are averaged.")
    parser.add_argument("--steps", type=int, help="Override the preset's steps per run.")
    parser.add_argument("--episodes-per-step", type=int, help="Override the preset's batch size.")
    parser.add_argument("--only", choices=sorted(EXPERIMENTS), nargs="+", help="Run only these experiments.")
    parser.add_argument("--out", type=Path, default=Path("gem-runs/paper-claims"), help="Output folder.")
    parser.add_argument("--last", type=int, default=2, help="Steps averaged for the summary table.")
    return parser.parse_args(argv)


def run_experiments(args: argparse.Namespace) -> dict[str, Any]:
    prefer_passive_openmp()
    import torch

    from gem_adapters.local.config import build_config
    from gem_adapters.local.trainer import Trainer

    preset_name = args.preset or ("gpu" if torch.cuda.is_available() else "cpu")
    preset = dict(PRESETS[preset_name])
    if args.steps:
        preset["steps"] = args.steps
    if args.episodes_per_step:
        preset["episodes_per_step"] = args.episodes_per_step
    results: dict[str, Any] = {"preset": preset_name, "settings": preset, "model": args.model, "experiments": {}}
    chosen = args.only or PRESET_EXPERIMENTS[preset_name]
    if "vision" in chosen and args.model == "smollm2":
        raise SystemExit("The vision experiment trains a vision-language model: pass --model with a local folder "
                         "saved with its processor (e.g. SmolVLM-256M-Instruct).")
    for name in chosen:
        env_id, metric, runs = EXPERIMENTS[name]
        experiment: dict[str, Any] = {"env": env_id, "metric": metric, "runs": {}}
        for label, settings in runs.items():
            curves = []
            for seed in args.seeds:
                folder = args.out / name / f"{label.replace(' ', '_')}-seed{seed}"
                print(f"== {name}: {label}, seed {seed} -> {folder}", flush=True)
                config = build_config({**preset, **settings, "envs": [env_id], "model": args.model,
                                       "seed": seed, "output_dir": str(folder)})
                curves.append(Trainer(config).run().records)
            experiment["runs"][label] = average_curves(curves)
        results["experiments"][name] = experiment
    return results


def average_curves(curves: list[list[dict[str, Any]]]) -> list[dict[str, float]]:
    """Per step, the mean of each metric over seeds."""
    averaged = []
    for records in zip(*curves):
        keys = [k for k, v in records[0].items() if isinstance(v, (int, float))]
        averaged.append({k: sum(r[k] for r in records) / len(records) for k in keys})
    return averaged


def summarise(results: dict[str, Any], last: int) -> list[dict[str, Any]]:
    rows = []
    for name, experiment in results["experiments"].items():
        metric = experiment["metric"]
        for label, records in experiment["runs"].items():
            tail = records[-last:]
            rows.append({
                "experiment": name, "run": label, "env": experiment["env"], "metric": metric,
                "first": records[0][metric], f"last_{last}_mean": sum(r[metric] for r in tail) / len(tail),
                "mean_return_last": sum(r["mean_return"] for r in tail) / len(tail),
                "steps": len(records),
            })
    return rows


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    experiments = results["experiments"]
    fig, axes = plt.subplots(1, len(experiments), figsize=(5.5 * len(experiments), 4), squeeze=False)
    titles = {"rebn_vs_reinforce": "ReBN vs REINFORCE", "gamma": "discount and episode length"}
    for ax, (name, experiment) in zip(axes[0], experiments.items()):
        for label, records in experiment["runs"].items():
            ax.plot([r["step"] for r in records], [r[experiment["metric"]] for r in records], marker="o", label=label)
        ax.set_title(f"{titles.get(name, name)}\n{experiment['env']}")
        ax.set_xlabel("step")
        ax.set_ylabel(experiment["metric"].replace("_", " "))
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend()
    fig.suptitle(f"GEM paper claims, {results['preset']} preset ({results['model']})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from gem_core.errors import GemError

    started = time.perf_counter()
    try:
        results = run_experiments(args)
    except GemError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    results["seconds"] = time.perf_counter() - started
    rows = summarise(results, args.last)
    results["summary"] = rows
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "claims.json").write_text(json.dumps(results, indent=2))
    with open(args.out / "claims.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    plot(results, args.out / "claims.png")

    from rich.table import Table

    from gem_core.cli.output import console

    table = Table(title=f"paper claims, {results['preset']} preset, {results['seconds'] / 60:.1f} min")
    for column in rows[0]:
        table.add_column(column.replace("_", " "), justify="left" if column in ("experiment", "run", "env", "metric") else "right")
    for row in rows:
        table.add_row(*(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row.values()))
    console().print(table)
    print(f"Results: {args.out / 'claims.json'}  Plot: {args.out / 'claims.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

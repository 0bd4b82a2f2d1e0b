"""Reproduce three claims of the GEM paper at small scale with the built-in trainer and TRL.

1. ReBN beats vanilla REINFORCE: success rate over training steps on an easy game
   (game:GuessTheNumber-v0-easy), same model, seeds and settings, only the estimator differs.
2. A discount below 1 makes agents finish sooner: turns per episode with gamma 0.9 versus 0.999,
   ReBN both times, on GuessTheNumber (``gpu`` preset: game:GuessTheNumber-v0, 1-20 in up to 20
   turns, as in the paper; ``cpu`` preset: the easy game, 1-10 in up to 4 turns, since an
   episode of 20 turns costs minutes per step on a CPU).

3. The same environment, estimator and model give matching learning curves through two
   frameworks (``frameworks`` preset): `gem train` and TRL's GRPOTrainer with GEM's adapter,
   both with ReBN (gamma 0.9), SmolLM2 with LoRA (rank 16, learning rate 1e-3), 14 steps of 16
   episodes (8 starts x 2) and 16 tokens per turn on the easy game; the curves should agree
   within the spread across seeds. The frameworks differ where they are meant to: `gem train`
   shows the episode so far in one prompt (its concat_chat wrapper), TRL keeps the conversation
   as chat turns. Needs the ``trl`` extra.

Every other run is `gem train` (the same Trainer class) with SmolLM2-135M-Instruct by default, over
several seeds. The ``cpu`` preset is `gem train`'s default run (14 steps of 16 episodes, about
five minutes each on 2 cores); a run that two experiments share (ReBN with gamma 0.9 on the easy
game) is played once. The ``gpu`` preset is the paper's scale, small.

    python scripts/reproduce_paper.py                      # the preset for this machine, seeds 0 1 2
    python scripts/reproduce_paper.py --preset gpu --seeds 0 1 2 3
    python scripts/reproduce_paper.py --preset vision --model ~/models/SmolVLM-256M-Instruct
    python scripts/reproduce_paper.py --preset frameworks  # gem train vs TRL, seeds 0 1 2 (CPU)

The ``vision`` preset trains a vision-language model (a local folder saved with its processor)
with ReBN on a generated visual task (vision:Geometry-v0), at the ``gpu`` preset's size.

For each claim it prints, per arm, the metric over the last steps of each seed, their mean and
spread, and whether the arms separate beyond the noise across seeds (every seed of the arm the
paper favours beats every seed of the other; for the frameworks, whether they do not). Under --out it writes the runs, ``claims.json``,
``claims.csv`` and ``claims.png`` (each seed's curve and the mean).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from gem_adapters.local.runtime import prefer_passive_openmp

EASY_GAME = "game:GuessTheNumber-v0-easy"
LONG_GAME = "game:GuessTheNumber-v0"
VISUAL_TASK = "vision:Geometry-v0"

PRESETS: dict[str, dict[str, Any]] = {
    "cpu": {"steps": 14, "episodes_per_step": 16, "max_new_tokens": 16, "max_prompt_tokens": 1024},
    "gpu": {"steps": 40, "episodes_per_step": 64, "max_new_tokens": 256, "max_prompt_tokens": 2048},
    "vision": {"steps": 40, "episodes_per_step": 64, "max_new_tokens": 256, "max_prompt_tokens": 2048},
    "frameworks": {"steps": 14, "episodes_per_step": 16, "max_new_tokens": 16, "max_prompt_tokens": 1024},
}
#: The game of the gamma experiment, per preset.
GAMMA_GAME = {"cpu": EASY_GAME, "gpu": LONG_GAME, "vision": LONG_GAME, "frameworks": EASY_GAME}

#: experiment -> (environment, or None for the preset's gamma game; metric; the arm the paper
#: favours is "higher" or "lower" on it, or "same" when the arms should agree; {arm label:
#: settings}, the favoured arm first; settings with "framework": "trl" run through TRL)
EXPERIMENTS: dict[str, tuple[str | None, str, str, dict[str, dict[str, Any]]]] = {
    "rebn_vs_reinforce": (EASY_GAME, "success_rate", "higher", {
        "ReBN": {"estimator": "rebn", "gamma": 0.9},
        "REINFORCE": {"estimator": "reinforce", "gamma": 0.9},
    }),
    "gamma": (None, "turns_per_episode", "lower", {
        "gamma 0.9": {"estimator": "rebn", "gamma": 0.9},
        "gamma 0.999": {"estimator": "rebn", "gamma": 0.999},
    }),
    "vision": (VISUAL_TASK, "success_rate", "higher", {
        "ReBN": {"estimator": "rebn", "gamma": 0.9},
    }),
    "frameworks": (EASY_GAME, "success_rate", "same", {
        "gem train": {"estimator": "rebn", "gamma": 0.9, "group_size": 2},
        "TRL": {"estimator": "rebn", "gamma": 0.9, "group_size": 2, "framework": "trl"},
    }),
}
#: What each preset runs unless --only says otherwise.
PRESET_EXPERIMENTS = {"cpu": ("rebn_vs_reinforce", "gamma"), "gpu": ("rebn_vs_reinforce", "gamma"),
                      "vision": ("vision",), "frameworks": ("frameworks",)}
TITLES = {"rebn_vs_reinforce": "ReBN vs REINFORCE", "gamma": "discount and episode length", "vision": "vision",
          "frameworks": "gem train vs TRL"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default=None,
                        help="Run size (default: gpu when a CUDA GPU is visible, else cpu).")
    parser.add_argument("--model", default="smollm2", help="Model folder, or smollm2 (default).")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                        help="Training seeds (default 0 1 2); each arm runs once per seed.")
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
    results: dict[str, Any] = {"preset": preset_name, "settings": preset, "model": args.model,
                               "seeds": args.seeds, "experiments": {}}
    chosen = args.only or PRESET_EXPERIMENTS[preset_name]
    if "vision" in chosen and args.model == "smollm2":
        raise SystemExit("The vision experiment trains a vision-language model: pass --model with a local folder "
                         "saved with its processor (e.g. SmolVLM-256M-Instruct).")
    played: dict[tuple[Any, ...], list[dict[str, Any]]] = {}  # a run two experiments share is played once
    for name in chosen:
        env_id, metric, better, arms = EXPERIMENTS[name]
        env_id = env_id or GAMMA_GAME[preset_name]
        experiment: dict[str, Any] = {"env": env_id, "metric": metric, "better": better, "runs": {}}
        for label, settings in arms.items():
            seeds = {}
            for seed in args.seeds:
                key = (env_id, tuple(sorted(settings.items())), seed)
                if key not in played:
                    run = f"{env_id.replace(':', '-')}-{settings['estimator']}-gamma{settings['gamma']}-seed{seed}"
                    if "group_size" in settings:
                        run += f"-group{settings['group_size']}"
                    if settings.get("framework") == "trl":
                        folder = args.out / "runs" / f"trl-{run}"
                        print(f"== {name}: {label}, seed {seed} -> {folder}", flush=True)
                        played[key] = trl_run(env_id, settings, preset, seed, folder, args.model)
                        seeds[str(seed)] = played[key]
                        continue
                    folder = args.out / "runs" / run
                    config = build_config({**preset, **settings, "envs": [env_id], "model": args.model,
                                           "seed": seed, "output_dir": str(folder)})
                    played[key] = finished_run(folder, config)
                    if played[key] is None:
                        print(f"== {name}: {label}, seed {seed} -> {folder}", flush=True)
                        played[key] = Trainer(config).run().records
                    else:
                        print(f"== {name}: {label}, seed {seed}: finished earlier in {folder}", flush=True)
                seeds[str(seed)] = played[key]
            experiment["runs"][label] = seeds
        results["experiments"][name] = experiment
    return results


def trl_run(env_id: str, settings: dict[str, Any], preset: dict[str, Any], seed: int, folder: Path,
            model: str) -> list[dict[str, Any]]:
    """One run of TRL's GRPOTrainer with GEM's adapter, at the preset's budget and with `gem
    train`'s LoRA defaults; returns one record per step, named as `gem train` names them."""
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig

    from gem_adapters.common.dataset import alternating_starts, first_observation
    from gem_adapters.common.options import EpisodeOptions
    from gem_adapters.local.config import LORA_LR
    from gem_adapters.trl.config import dataset_row
    from gem_adapters.trl.train import model_path
    from gem_adapters.trl.trainer import GemGRPOTrainer

    recipe = {"env": env_id, "settings": settings, "preset": preset, "seed": seed, "model": model}
    saved = folder / "metrics.json"
    if saved.exists():  # an earlier call finished this run
        earlier = json.loads(saved.read_text())
        if earlier.get("recipe") == recipe and len(earlier.get("records", [])) == preset["steps"]:
            return earlier["records"]
    group = settings["group_size"]
    starts = alternating_starts([env_id], 1_000_003 * (seed + 1), preset["steps"] * preset["episodes_per_step"] // group)
    rows = [dataset_row(e, s, i, "train", first_observation(e, s, EpisodeOptions()))
            for i, (e, s) in enumerate(starts)]
    args = GRPOConfig(output_dir=str(folder), use_cpu=True, bf16=False, fp16=False, seed=seed,
                      per_device_train_batch_size=preset["episodes_per_step"], num_generations=group,
                      max_completion_length=preset["max_new_tokens"], max_steps=preset["steps"],
                      learning_rate=LORA_LR, temperature=1.0, beta=0.0, logging_steps=1, report_to=[],
                      save_strategy="no", gradient_checkpointing=False, dataloader_num_workers=0)
    trainer = GemGRPOTrainer(model=model_path(model), args=args, train_dataset=Dataset.from_list(rows),
                             estimator=settings["estimator"], gamma=settings["gamma"],
                             peft_config=LoraConfig(r=16, lora_alpha=32, target_modules="all-linear",
                                                    task_type="CAUSAL_LM"))
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "gem/success_rate" in entry]
    records = [{"step": step, "success_rate": entry["gem/success_rate"], "mean_return": entry["reward"],
                "turns_per_episode": entry["gem/turns"]} for step, entry in enumerate(logged, start=1)]
    folder.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps({"recipe": recipe, "records": records}, indent=1))
    return records


def finished_run(folder: Path, config: Any) -> list[dict[str, Any]] | None:
    """The records of a run that an earlier call finished in ``folder`` with the same settings,
    or None (so adding seeds to a finished experiment plays only the new ones)."""
    from gem_adapters.local.config import load_config_file
    from gem_adapters.local.metrics import MetricsLog

    try:
        saved = load_config_file(folder / "config.yaml")
    except Exception:  # missing or unreadable: play the run
        return None
    records = MetricsLog(folder / "metrics.jsonl").read()
    if saved != config.to_dict() or [r["step"] for r in records] != list(range(1, config.steps + 1)):
        return None
    return records


def last_mean(records: list[dict[str, Any]], metric: str, last: int) -> float:
    tail = records[-last:]
    return sum(r[metric] for r in tail) / len(tail)


def summarise(results: dict[str, Any], last: int) -> list[dict[str, Any]]:
    """One row per arm: the metric over the last steps of each seed, their mean and spread, and
    whether the experiment's arms separate beyond the noise across seeds."""
    rows = []
    for name, experiment in results["experiments"].items():
        metric, better = experiment["metric"], experiment["better"]
        per_arm = {label: [last_mean(records, metric, last) for records in seeds.values()]
                   for label, seeds in experiment["runs"].items()}
        labels = list(per_arm)
        separated = None
        if len(labels) == 2:
            favoured, other = per_arm[labels[0]], per_arm[labels[1]]
            if better == "same":  # "separated" means the frameworks disagree beyond the seeds' spread
                separated = min(favoured) > max(other) or max(favoured) < min(other)
            else:
                separated = min(favoured) > max(other) if better == "higher" else max(favoured) < min(other)
        for label, values in per_arm.items():
            rows.append({
                "experiment": name, "run": label, "env": experiment["env"], "metric": metric,
                f"last_{last}_per_seed": " ".join(f"{v:.2f}" for v in values),
                "mean": statistics.fmean(values),
                "spread": statistics.stdev(values) if len(values) > 1 else 0.0,
                "separated": "" if separated is None else ("yes" if separated else "no"),
            })
    return rows


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    experiments = results["experiments"]
    fig, axes = plt.subplots(1, len(experiments), figsize=(5.5 * len(experiments), 4), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (name, experiment) in zip(axes[0], experiments.items()):
        metric = experiment["metric"]
        for colour, (label, seeds) in zip(colours, experiment["runs"].items()):
            curves = list(seeds.values())
            for records in curves:
                ax.plot([r["step"] for r in records], [r[metric] for r in records], color=colour, alpha=0.25, linewidth=1)
            steps = [r["step"] for r in curves[0]]
            mean = [statistics.fmean(step[metric] for step in column) for column in zip(*curves)]
            ax.plot(steps, mean, color=colour, marker="o", markersize=3, linewidth=2, label=f"{label} (mean of {len(curves)})")
        ax.set_title(f"{TITLES.get(name, name)}\n{experiment['env']}")
        ax.set_xlabel("step")
        ax.set_ylabel(metric.replace("_", " "))
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend()
    fig.suptitle(f"GEM paper claims, {results['preset']} preset ({results['model']}); thin lines: single seeds")
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

    table = Table(title=f"paper claims, {results['preset']} preset, seeds {' '.join(map(str, args.seeds))}, "
                        f"{results['seconds'] / 60:.1f} min")
    for column in rows[0]:
        table.add_column(column.replace("_", " "), justify="right" if column in ("mean", "spread") else "left")
    for row in rows:
        table.add_row(*(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row.values()))
    console().print(table)
    print(f"Results: {args.out / 'claims.json'}  Plot: {args.out / 'claims.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Reproduce claims of the GEM paper at small scale with the built-in trainer and TRL.

1. ReBN beats vanilla REINFORCE: success rate over training steps, same model, seeds and
   settings, only the estimator differs. The ``cpu`` and ``gpu`` presets play it where the paper's
   argument applies, on sparse 0/1 rewards (game:GuessTheNumber-v0-easy-sparse: 1 for finding the number,
   0 otherwise, no format penalty), where REINFORCE gets no negative signal and ReBN both signs
   (``sparse_rebn_vs_reinforce``); ``rebn_vs_reinforce`` is the same on the easy game, whose
   format errors cost -0.1.
2. A discount below 1 makes agents finish sooner: turns per episode with gamma 0.9 versus 0.999,
   ReBN both times, on GuessTheNumber (``gamma``; ``gpu`` preset: game:GuessTheNumber-v0, 1-20
   in up to 20 turns, as in the paper). The ``cpu`` and ``gpu`` presets measure turns per *won* episode on
   game:GuessTheNumber-v0-long-sparse (1-20, 10 turns, 0/1 reward), where extra turns cost
   nothing but the discount (``sparse_gamma``).
3. ReBN induces tool use: the share of episodes that call the Python tool, ReBN versus
   REINFORCE, on products of 4-digit integers with the tool (math:Products-v0+Tool), which a
   small model cannot multiply in its head (``tool_rebn_vs_reinforce``).
4. The same environment, estimator and model give matching learning curves through two
   frameworks (``frameworks`` preset): `gem train` and TRL's GRPOTrainer with GEM's adapter,
   both with ReBN (gamma 0.9), SmolLM2 with LoRA (rank 16, learning rate 1e-3), 14 steps of 16
   episodes (8 starts x 2) and 16 tokens per turn on the easy game; the curves should agree
   within the spread across seeds. The frameworks differ where they are meant to: `gem train`
   shows the episode so far in one prompt (its concat_chat wrapper), TRL keeps the conversation
   as chat turns. Needs the ``trl`` extra.

Every run but TRL's is `gem train` (the same Trainer class) with SmolLM2-135M-Instruct by default, over
several seeds. The ``cpu`` preset runs claims 1-3 as above at `gem train`'s default size (14 steps
of 16 episodes; 160 new tokens per turn for the tool claim); a run that two experiments share is
played once. The ``gpu`` preset runs claims 1 and 2 (the sparse ones) with four times the
episodes per step and more steps: both arms, five seeds, 20 runs sharing one GPU in one device
call (docs/training.md explains the sizing). ``--jobs N`` plays N runs at once, each a `gem
train` process (on a GPU they share the device); ``--time-limit SECONDS`` stops the runs still
playing then, and judges each experiment at the last step all its runs reached.

    python scripts/reproduce_paper.py                      # the preset for this machine, seeds 0-4
    python scripts/reproduce_paper.py --preset cpu --jobs 16
    python scripts/reproduce_paper.py --preset gpu --jobs 20 --time-limit 480
    python scripts/reproduce_paper.py --preset vision --model ~/models/SmolVLM-256M-Instruct
    python scripts/reproduce_paper.py --preset frameworks --seeds 0 1 2   # gem train vs TRL (CPU)

The ``vision`` preset trains a vision-language model (a local folder saved with its processor)
with ReBN on a generated visual task (vision:Geometry-v0), 40 steps of 64 episodes.

For each claim it prints, per arm and judged metric, the metric over the last steps of each
seed, their mean and spread, and whether the arms separate beyond the noise across seeds (every
seed of the arm the paper favours beats every seed of the other: with five seeds per arm, a
one-sided Mann-Whitney test at p = 1/252; for the frameworks, whether they disagree so). Under --out it writes the runs, ``claims.json``,
``claims.csv``, ``claims.png`` (each seed's curve and the mean) and ``claim-NAME.png`` per
experiment (mean over seeds with their range shaded, each judged metric).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gem_trainer.runtime import prefer_passive_openmp

EASY_GAME = "game:GuessTheNumber-v0-easy"
LONG_GAME = "game:GuessTheNumber-v0"
VISUAL_TASK = "vision:Geometry-v0"
EASY_SPARSE_GAME = "game:GuessTheNumber-v0-easy-sparse"
LONG_SPARSE_GAME = "game:GuessTheNumber-v0-long-sparse"
TOOL_TASK = "math:Products-v0+Tool"

PRESETS: dict[str, dict[str, Any]] = {
    "cpu": {"steps": 14, "episodes_per_step": 16, "max_new_tokens": 16, "max_prompt_tokens": 1024},
    # 20 runs share one GPU's memory: smaller micro-batches than one run alone would take, and
    # prompts bounded near the longest episode of claim 2 (10 turns: a last prompt of about 520 tokens)
    "gpu": {"steps": 20, "episodes_per_step": 64, "max_new_tokens": 16, "max_prompt_tokens": 768,
            "micro_batch_tokens": 2048},
    "vision": {"steps": 40, "episodes_per_step": 64, "max_new_tokens": 256, "max_prompt_tokens": 2048},
    "frameworks": {"steps": 14, "episodes_per_step": 16, "max_new_tokens": 16, "max_prompt_tokens": 1024},
}
#: The game of the gamma experiment, per preset.
GAMMA_GAME = {"cpu": EASY_GAME, "gpu": LONG_GAME, "vision": LONG_GAME, "frameworks": EASY_GAME}

REBN_VS_REINFORCE = {"ReBN": {"estimator": "rebn", "gamma": 0.9}, "REINFORCE": {"estimator": "reinforce", "gamma": 0.9}}
GAMMAS = {"gamma 0.9": {"estimator": "rebn", "gamma": 0.9}, "gamma 0.999": {"estimator": "rebn", "gamma": 0.999}}

#: experiment -> (environment, or None for the preset's gamma game; metric; the arm the paper
#: favours is "higher" or "lower" on it, or "same" when the arms should agree; {arm label:
#: settings}, the favoured arm first; settings with "framework": "trl" run through TRL)
EXPERIMENTS: dict[str, tuple[str | None, str, str, dict[str, dict[str, Any]]]] = {
    "rebn_vs_reinforce": (EASY_GAME, "success_rate", "higher", REBN_VS_REINFORCE),
    "gamma": (None, "turns_per_episode", "lower", GAMMAS),
    "vision": (VISUAL_TASK, "success_rate", "higher", {
        "ReBN": {"estimator": "rebn", "gamma": 0.9},
    }),
    "sparse_rebn_vs_reinforce": (EASY_SPARSE_GAME, "success_rate", "higher", REBN_VS_REINFORCE),
    "sparse_gamma": (LONG_SPARSE_GAME, "turns_per_success", "lower", GAMMAS),
    "tool_rebn_vs_reinforce": (TOOL_TASK, "tool_call_rate", "higher", REBN_VS_REINFORCE),
    "frameworks": (EASY_GAME, "success_rate", "same", {
        "gem train": {"estimator": "rebn", "gamma": 0.9, "group_size": 2},
        "TRL": {"estimator": "rebn", "gamma": 0.9, "group_size": 2, "framework": "trl"},
    }),
}
#: Further metrics judged (and drawn) per experiment: (metric, the favoured arm is higher or lower).
ALSO_JUDGED: dict[str, tuple[tuple[str, str], ...]] = {
    "sparse_rebn_vs_reinforce": (("format_error_rate", "lower"),),
    "sparse_gamma": (("success_rate", "higher"),),
    "tool_rebn_vs_reinforce": (("success_rate", "higher"),),
}
#: Per-step metrics averaged over steps in proportion to another (turns per won episode: by wins).
WEIGHTED_BY = {"turns_per_success": "success_rate"}
#: The least max_new_tokens of an experiment (a tool call and its answer need room).
MIN_NEW_TOKENS = {"tool_rebn_vs_reinforce": 160}
#: What each preset runs unless --only says otherwise.
PRESET_EXPERIMENTS = {"cpu": ("sparse_rebn_vs_reinforce", "sparse_gamma", "tool_rebn_vs_reinforce"),
                      "gpu": ("sparse_rebn_vs_reinforce", "sparse_gamma"), "vision": ("vision",),
                      "frameworks": ("frameworks",)}
TITLES = {"rebn_vs_reinforce": "ReBN vs REINFORCE", "gamma": "discount and episode length", "vision": "vision",
          "sparse_rebn_vs_reinforce": "ReBN vs REINFORCE, 0/1 rewards",
          "sparse_gamma": "discount and turns per won episode, 0/1 rewards",
          "tool_rebn_vs_reinforce": "ReBN vs REINFORCE: tool use", "frameworks": "gem train vs TRL"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default=None,
                        help="Run size (default: gpu when a CUDA GPU is visible, else cpu).")
    parser.add_argument("--model", default="smollm2", help="Model folder, or smollm2 (default).")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4],
                        help="Training seeds (default 0 1 2 3 4); each arm runs once per seed.")
    parser.add_argument("--steps", type=int, help="Override the preset's steps per run.")
    parser.add_argument("--episodes-per-step", type=int, help="Override the preset's batch size.")
    parser.add_argument("--only", choices=sorted(EXPERIMENTS), nargs="+", help="Run only these experiments.")
    parser.add_argument("--out", type=Path, default=Path("gem-runs/paper-claims"), help="Output folder.")
    parser.add_argument("--last", type=int, default=2, help="Steps averaged for the summary table.")
    parser.add_argument("--jobs", type=int, default=1,
                        help="Runs played at once, each a `gem train` process (default 1: in this process).")
    parser.add_argument("--no-play", action="store_true",
                        help="Play nothing: summarise the runs an earlier call finished, listing the missing ones.")
    parser.add_argument("--time-limit", type=float, metavar="SECONDS",
                        help="Stop the runs still playing after this long (they play as processes, --jobs at once) "
                             "and judge each experiment at the last step all its runs reached.")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}.")
    if args.time_limit is not None and args.time_limit <= 0:
        parser.error(f"--time-limit must be a positive number of seconds, got {args.time_limit:g}.")
    return args


def run_experiments(args: argparse.Namespace) -> dict[str, Any]:
    prefer_passive_openmp()
    import torch

    from gem_trainer.config import build_config
    from gem_trainer.training.trainer import Trainer

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
    # key -> (run folder, config, what it serves); a run two experiments share is played once
    planned: dict[tuple[Any, ...], tuple[Path, Any, str]] = {}
    for name in chosen:
        env_id, _, _, arms = EXPERIMENTS[name]
        env_id = env_id or GAMMA_GAME[preset_name]
        for label, settings in arms.items():
            values = {**preset, **settings}
            values["max_new_tokens"] = max(values["max_new_tokens"], MIN_NEW_TOKENS.get(name, 0))
            for seed in args.seeds:
                key = run_key(env_id, values, seed)
                if key not in planned:
                    folder = args.out / "runs" / run_name(env_id, values, preset, seed)
                    if values.get("framework") == "trl":  # played by trl_run: the config is its recipe
                        config = {"env": env_id, "settings": settings, "preset": preset, "seed": seed,
                                  "model": args.model}
                    else:
                        config = build_config({**values, "envs": [env_id], "model": args.model,
                                               "seed": seed, "output_dir": str(folder)})
                    planned[key] = (folder, config, f"{name}: {label}, seed {seed}")
    played: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    pending = []
    for key, (folder, config, what) in planned.items():
        records = finished_trl_run(folder, config) if is_trl(key) else finished_run(folder, config)
        if records is None:
            pending.append(key)
        else:
            print(f"== {what}: finished earlier in {folder}", flush=True)
            played[key] = records
    if args.no_play:
        for key in pending:
            print(f"== {planned[key][2]}: not played (--no-play)", flush=True)
    else:
        for key in [key for key in pending if is_trl(key)]:  # TRL runs in this process, one at a time
            folder, recipe, what = planned[key]
            print(f"== {what} -> {folder}", flush=True)
            played[key] = trl_run(recipe, folder)
        pending_gem = [key for key in pending if not is_trl(key)]
        if args.jobs == 1 and args.time_limit is None:
            for key in pending_gem:
                folder, config, what = planned[key]
                print(f"== {what} -> {folder}", flush=True)
                played[key] = Trainer(config).run().records
        else:
            played.update(play_in_processes({key: planned[key] for key in pending_gem}, args.jobs, args.out / "logs",
                                            time_limit=args.time_limit))
    results["missing"] = [planned[key][2] for key in pending if not played.get(key)]

    for name in chosen:
        env_id, metric, better, arms = EXPERIMENTS[name]
        env_id = env_id or GAMMA_GAME[preset_name]
        experiment: dict[str, Any] = {"env": env_id, "metric": metric, "better": better,
                                      "also_judged": [list(m) for m in ALSO_JUDGED.get(name, ())], "runs": {}}
        for label, settings in arms.items():
            values = {**preset, **settings}
            values["max_new_tokens"] = max(values["max_new_tokens"], MIN_NEW_TOKENS.get(name, 0))
            keys = {seed: run_key(env_id, values, seed) for seed in args.seeds}
            experiment["runs"][label] = {str(seed): played[key] for seed, key in keys.items() if played.get(key)}
        reached = [len(records) for seeds in experiment["runs"].values() for records in seeds.values()]
        if reached and min(reached) < preset["steps"]:  # cut by the time limit: judged where every run got to
            experiment["judged_at_step"] = min(reached)
        results["experiments"][name] = experiment
    return results


def run_key(env_id: str, values: dict[str, Any], seed: int) -> tuple[Any, ...]:
    """What makes two runs the same run (two experiments may share one)."""
    return (values.get("framework", "gem train"), env_id, values["estimator"], values["gamma"],
            values["max_new_tokens"], values.get("group_size", 1), seed)


def is_trl(key: tuple[Any, ...]) -> bool:
    return key[0] == "trl"


def run_name(env_id: str, values: dict[str, Any], preset: dict[str, Any], seed: int) -> str:
    """The run's folder name: environment, estimator, gamma and seed, plus the token budget where an
    experiment raised the preset's, the group size where it is set, and ``trl-`` for TRL's runs."""
    tokens = "" if values["max_new_tokens"] == preset["max_new_tokens"] else f"-tokens{values['max_new_tokens']}"
    group = f"-group{values['group_size']}" if "group_size" in values else ""
    prefix = "trl-" if values.get("framework") == "trl" else ""
    name = f"{env_id.replace(':', '-').replace('+', '-')}-{values['estimator']}-gamma{values['gamma']}{tokens}"
    return f"{prefix}{name}-seed{seed}{group}"


def play_in_processes(runs: dict[tuple[Any, ...], tuple[Path, Any, str]], jobs: int, logs: Path, *,
                      time_limit: float | None = None) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """Play each run as a `gem train --config` process, ``jobs`` at once (each log under ``logs``);
    the records of those that finished. A failed run is reported and left out. Past
    ``time_limit`` seconds the runs still playing are stopped (those not started never start),
    and the steps they finished are kept."""
    from gem_trainer.config import save_config

    logs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    # share the cores out, unless told otherwise; on a GPU the processes share the device
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // jobs)))
    deadline = None if time_limit is None else time.monotonic() + time_limit

    def play(key: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[dict[str, Any]] | None]:
        folder, config, what = runs[key]
        if deadline is not None and time.monotonic() >= deadline:
            print(f"== {what}: not started (--time-limit)", flush=True)
            return key, None
        plan, log = logs / f"{folder.name}.yaml", logs / f"{folder.name}.log"
        save_config(config, plan)
        print(f"== {what} -> {folder} (log {log})", flush=True)
        with open(log, "w") as out:
            process = subprocess.Popen([sys.executable, "-m", "gem_core.cli", "train", "--config", str(plan)],
                                       stdout=out, stderr=subprocess.STDOUT, env=env)
            code = _wait(process, deadline)
        records = finished_run(folder, config)
        if records is None and code is None:
            records = played_steps(folder, config) or []
            print(f"== {what}: stopped by --time-limit after {len(records)} steps", flush=True)
        elif records is None:
            print(f"== {what}: failed (exit status {code}); see {log}", flush=True)
        return key, records

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return {key: records for key, records in pool.map(play, list(runs)) if records is not None}


def _wait(process: subprocess.Popen, deadline: float | None) -> int | None:
    """The process's exit status; None when it was stopped at ``deadline`` (asked to stop, then
    killed 20 s later)."""
    try:
        return process.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        return None


def trl_run(recipe: dict[str, Any], folder: Path) -> list[dict[str, Any]]:
    """One run of TRL's GRPOTrainer with GEM's adapter, at the preset's budget and with `gem
    train`'s LoRA defaults; returns one record per step, named as `gem train` names them."""
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig

    from gem_adapters.common.dataset import alternating_starts, first_observation
    from gem_adapters.common.options import EpisodeOptions
    from gem_adapters.trl.config import dataset_row
    from gem_adapters.trl.train import model_path
    from gem_adapters.trl.trainer import GemGRPOTrainer
    from gem_trainer.config import LORA_LR

    env_id, settings, preset, seed, model = (recipe[k] for k in ("env", "settings", "preset", "seed", "model"))
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
    (folder / "metrics.json").write_text(json.dumps({"recipe": recipe, "records": records}, indent=1))
    return records


def finished_trl_run(folder: Path, recipe: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The records of a TRL run that an earlier call finished in ``folder`` with the same recipe."""
    saved = folder / "metrics.json"
    if not saved.exists():
        return None
    earlier = json.loads(saved.read_text())
    if earlier.get("recipe") == recipe and len(earlier.get("records", [])) == recipe["preset"]["steps"]:
        return earlier["records"]
    return None


def finished_run(folder: Path, config: Any) -> list[dict[str, Any]] | None:
    """The records of a run that an earlier call finished in ``folder`` with the same settings,
    or None (so adding seeds to a finished experiment plays only the new ones)."""
    records = played_steps(folder, config)
    if records is None or [r["step"] for r in records] != list(range(1, config.steps + 1)):
        return None
    return records


def played_steps(folder: Path, config: Any) -> list[dict[str, Any]] | None:
    """The records of the steps a run with these settings played in ``folder``, or None when the
    folder holds no such run."""
    from gem_trainer.config import build_config, load_config_file
    from gem_trainer.metrics import MetricsLog

    try:  # a setting added to gem train since the run was played counts at its default
        saved = build_config(load_config_file(folder / "config.yaml")).to_dict()
    except Exception:  # missing, unreadable or no longer valid: play the run
        return None
    return MetricsLog(folder / "metrics.jsonl").read() if saved == config.to_dict() else None


def last_mean(records: list[dict[str, Any]], metric: str, last: int) -> float | None:
    """The metric over the last steps; one in :data:`WEIGHTED_BY` is weighted by its weight (turns
    per won episode by the wins), and is None when no step has weight."""
    tail = records[-last:]
    weight_metric = WEIGHTED_BY.get(metric)
    if weight_metric is None:
        return sum(r[metric] for r in tail) / len(tail)
    weighted = [(r[metric], r[weight_metric]) for r in tail if r.get(metric) is not None and r[weight_metric] > 0]
    total = sum(w for _, w in weighted)
    return sum(v * w for v, w in weighted) / total if total else None


def judged_metrics(experiment: dict[str, Any]) -> list[tuple[str, str]]:
    """The experiment's metric, then the further ones it judges, each with its favoured direction."""
    return [(experiment["metric"], experiment["better"]), *map(tuple, experiment.get("also_judged", ()))]


def separated(favoured: list[float], other: list[float], better: str) -> bool:
    """Every seed of the favoured arm beats every seed of the other (for arms that should agree,
    ``better == "same"``: every seed of one beats every seed of the other, either way)."""
    if better == "same":
        return min(favoured) > max(other) or max(favoured) < min(other)
    return min(favoured) > max(other) if better == "higher" else max(favoured) < min(other)


def summarise(results: dict[str, Any], last: int) -> list[dict[str, Any]]:
    """One row per arm and judged metric: the metric over the last steps of each seed (``-`` where
    it has no value, e.g. turns per won episode without a win), their mean and spread, and whether
    the experiment's arms separate beyond the noise across seeds. An experiment cut by the time
    limit is judged at ``judged_at_step``, the last step all its runs reached."""
    rows = []
    for name, experiment in results["experiments"].items():
        upto = experiment.get("judged_at_step")
        for metric, better in judged_metrics(experiment):
            per_arm = {label: [last_mean(records[:upto], metric, last) for records in seeds.values()]
                       for label, seeds in experiment["runs"].items()}
            known = {label: [v for v in values if v is not None] for label, values in per_arm.items()}
            labels = list(per_arm)
            verdict = ""
            if len(labels) == 2:
                favoured, other = known[labels[0]], known[labels[1]]
                verdict = "yes" if favoured and other and separated(favoured, other, better) else "no"
            for label, values in per_arm.items():
                kept = known[label]
                rows.append({
                    "experiment": name, "run": label, "env": experiment["env"], "metric": metric,
                    "steps": upto or max((len(r) for r in experiment["runs"][label].values()), default=0),
                    f"last_{last}_per_seed": " ".join("-" if v is None else f"{v:.2f}" for v in values),
                    "mean": statistics.fmean(kept) if kept else math.nan,
                    "spread": statistics.stdev(kept) if len(kept) > 1 else 0.0,
                    "separated": verdict,
                })
    return rows


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    experiments = results["experiments"]
    fig, axes = plt.subplots(1, len(experiments), figsize=(max(5.5 * len(experiments), 8), 4), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (name, experiment) in zip(axes[0], experiments.items()):
        metric = experiment["metric"]
        for colour, (label, seeds) in zip(colours, experiment["runs"].items()):
            curves = list(seeds.values())
            if not curves:
                continue
            for records in curves:
                ax.plot([r["step"] for r in records], values_of(records, metric), color=colour, alpha=0.25, linewidth=1)
            steps, mean, _, _ = band(curves, metric)
            ax.plot(steps, mean, color=colour, marker="o", markersize=3, linewidth=2, label=f"{label} (mean of {len(curves)})")
        ax.set_title(f"{TITLES.get(name, name)}\n{experiment['env']}")
        ax.set_xlabel("step")
        ax.set_ylabel(metric.replace("_", " "))
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend()
    fig.suptitle(f"GEM paper claims, {results['preset']} preset ({model_name(results)}); thin lines: single seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def model_name(results: dict[str, Any]) -> str:
    """The model as a figure names it: the built-in name, or a folder's last part."""
    return Path(results["model"]).name


def values_of(records: list[dict[str, Any]], metric: str) -> list[float]:
    """A metric per step, NaN where a step has none (a gap in the curve)."""
    return [math.nan if r.get(metric) is None else r[metric] for r in records]


def band(curves: list[list[dict[str, Any]]], metric: str) -> tuple[list[int], list[float], list[float], list[float]]:
    """Steps, and per step the mean, least and greatest value over the seeds that have one."""
    by_step: dict[int, list[float]] = {}
    for records in curves:
        for record, value in zip(records, values_of(records, metric)):
            by_step.setdefault(record["step"], []).append(value)
    steps = sorted(by_step)
    mean, low, high = [], [], []
    for step in steps:
        known = [v for v in by_step[step] if not math.isnan(v)]
        mean.append(statistics.fmean(known) if known else math.nan)
        low.append(min(known) if known else math.nan)
        high.append(max(known) if known else math.nan)
    return steps, mean, low, high


def plot_claim(results: dict[str, Any], name: str, path: Path) -> None:
    """One experiment's figure: a panel per judged metric, each arm's mean over seeds with the
    range of its seeds shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    experiment = results["experiments"][name]
    metrics = judged_metrics(experiment)
    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 3.8), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (metric, better) in zip(axes[0], metrics):
        for colour, (label, seeds) in zip(colours, experiment["runs"].items()):
            curves = list(seeds.values())
            if not curves:
                continue
            steps, mean, low, high = band(curves, metric)
            ax.fill_between(steps, low, high, color=colour, alpha=0.15, linewidth=0)
            ax.plot(steps, mean, color=colour, linewidth=2, label=f"{label} ({len(curves)} seeds)")
        ax.set_xlabel("training step")
        ax.set_ylabel(metric.replace("_", " "))
        ax.set_title(f"{metric.replace('_', ' ')} ({better} is better)", fontsize=10)
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=8)
    fig.suptitle(f"{TITLES.get(name, name)}: {experiment['env']}, {model_name(results)}, {results['preset']} preset\n"
                 "mean over seeds, shaded: their range", fontsize=10)
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
    for name in results["experiments"]:
        plot_claim(results, name, args.out / f"claim-{name}.png")

    from rich.table import Table

    from gem_core.cli.output import console

    table = Table(title=f"paper claims, {results['preset']} preset, seeds {' '.join(map(str, args.seeds))}, "
                        f"{results['seconds'] / 60:.1f} min")
    for column in rows[0]:
        table.add_column(column.replace("_", " "), justify="right" if column in ("mean", "spread") else "left")
    for row in rows:
        table.add_row(*(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row.values()))
    console().print(table)
    for missing in results["missing"]:
        print(f"Missing: {missing}")
    print(f"Results: {args.out / 'claims.json'}  Plot: {args.out / 'claims.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Workload: sampling and training steps on a GPU: `gem train`'s decoders, transformers' generate and the TRL adapter.

Run as ``python bench/workloads/gpu_rollout.py --impl ours [--quick] [--out DIR]``. It is made for
one CUDA GPU (``scripts/gpu/rollouts.sh`` runs it there, never CI) and runs small on a CPU, where
the benchmark's tests run it. ``--impl reference`` exits with code 3: the reference has no trainer.

For each number of episodes per step (``--episodes``; default 16 and 64 on a GPU, 16 on a CPU, 4
with ``--quick``), on `gem train`'s default task (game:GuessTheNumber-v0-easy, 16 tokens per
turn, temperature 1) with ``--model`` (default the built-in SmolLM2-135M-Instruct):

* ``bare``: the first turn's prompts of that many episodes, every row sampling all its tokens (no
  stop token), through each sampler, side by side in one process: ``generate`` (transformers'
  ``generate``: eager, a dynamic cache, prompts read whole), ``dynamic_cache`` (the decoder `gem
  train` used before, kept in ``_dynamic_cache_decoder.py``), ``buffer`` (the decoder `gem train`
  uses: on CUDA its device loop with each step a captured CUDA graph) and, on CUDA,
  ``buffer_no_graphs`` (the device loop uncaptured) and ``generate_batch`` (transformers'
  continuous batching). The figure is sampled tokens per second, the median of three timed calls
  after a warm-up call;
* ``train``: ``--steps`` (default 3; 2 with ``--quick``) `gem train` steps with each of
  ``generate``, ``dynamic_cache``, ``buffer`` (and ``buffer_no_graphs`` on CUDA): sampled tokens
  per second and seconds per step (rollout and training), over the steps after the first (which
  captures graphs and warms caches);
* ``trl``: as many steps of the TRL adapter (``gem trl config`` with 4 episodes per start, then its
  GemGRPOTrainer, LoRA rank 16 as `gem train`), with TRL's ``generate`` and with its continuous
  batching (``use_transformers_continuous_batching``): seconds per step and sampled tokens per
  second of its generation. Skipped without ``trl`` (the ``trl`` extra).

The parts run in that order, each for every number of episodes in the order given. The last
stdout line holds the metrics, named ``{part}_{sampler}_{episodes}_tokens_per_s`` and
``{part}_{sampler}_{episodes}_step_s``, plus ``bare_buffer_vs_generate_{episodes}`` (the ratio of
the two). ``results.json`` (every figure and every step, with the machine) and the chart
``gpu_rollout.png`` go to ``--out`` (default ``bench/results/gpu-rollout``), both rewritten after
each measurement, so a run cut short keeps what it measured.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _protocol import Metrics, no_counterpart, parser as workload_parser

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE.parent / "results" / "gpu-rollout"
ENV_ID = "game:GuessTheNumber-v0-easy"
MAX_NEW_TOKENS = 16
TIMED_CALLS = 3
TRL_GENERATIONS = 4  # episodes per start in the TRL runs, as `gem trl config --n 4`
CONTINUOUS_BATCHING_ON_CPU = ("made for GPUs: on a 2-core CPU, transformers' generate_batch took 61 s for 8 prompts "
                              "of a 2-layer model")


def parse_args() -> Any:
    parser = workload_parser(__doc__, "4 episodes per step and 2 steps")
    parser.add_argument("--model", default="smollm2", help="model folder, or smollm2 (default)")
    parser.add_argument("--episodes", type=int, nargs="+", help="episodes per step (default 16 64 on a GPU, 16 on a CPU)")
    parser.add_argument("--steps", type=int, help="steps per training run (default 3; 2 with --quick)")
    parser.add_argument("--parts", nargs="+", choices=("bare", "train", "trl"), default=["bare", "train", "trl"],
                        help="what to measure (default all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.impl == "reference":
        no_counterpart("The reference implementation has no trainer to sample with.")
    from gem_trainer.runtime import prefer_passive_openmp

    prefer_passive_openmp()
    import torch

    from gem_trainer.models import quiet_transformers

    quiet_transformers()
    cuda = torch.cuda.is_available()
    episodes = args.episodes or ([4] if args.quick else [16, 64] if cuda else [16])
    steps = args.steps or (2 if args.quick else 3)
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "machine": machine(), "model": args.model, "env": ENV_ID, "max_new_tokens": MAX_NEW_TOKENS,
        "episodes": episodes, "steps": steps, "bare": [], "train": [], "trl": [], "skipped": {},
    }
    metrics = Metrics()
    samplers = ["generate", "dynamic_cache", "buffer"] + (["buffer_no_graphs"] if cuda else [])
    if not cuda:
        results["skipped"]["generate_batch and TRL's continuous batching"] = CONTINUOUS_BATCHING_ON_CPU
    # most telling first, and saved as it goes: a run cut short keeps what it measured
    if "bare" in args.parts:
        for count in episodes:
            for sampler in samplers + (["generate_batch"] if cuda else []):
                figure = bare(args.model, sampler, count)
                results["bare"].append(figure)
                metrics.add(f"bare_{sampler}_{count}_tokens_per_s", figure["tokens_per_s"], "tokens/s")
                save(results, args.out)
            rates = {f["sampler"]: f["tokens_per_s"] for f in results["bare"] if f["episodes"] == count}
            metrics.add(f"bare_buffer_vs_generate_{count}", rates["buffer"] / rates["generate"], "x")
    if "train" in args.parts:
        for count in episodes:
            for sampler in samplers:
                figure = train(args.model, sampler, count, steps)
                results["train"].append(figure)
                metrics.add(f"train_{sampler}_{count}_tokens_per_s", figure["tokens_per_s"], "tokens/s")
                metrics.add(f"train_{sampler}_{count}_step_s", figure["step_s"], "s", "lower")
                save(results, args.out)
    if "trl" in args.parts and trl_missing():
        results["skipped"]["trl"] = trl_missing()
    elif "trl" in args.parts:
        for count in episodes:
            for generation in ("generate", "continuous_batching") if cuda else ("generate",):
                figure = trl(args.model, generation, count, steps, cuda)
                results["trl"].append(figure)
                metrics.add(f"trl_{generation}_{count}_tokens_per_s", figure["tokens_per_s"], "tokens/s")
                metrics.add(f"trl_{generation}_{count}_step_s", figure["step_s"], "s", "lower")
                save(results, args.out)
    save(results, args.out)
    for line in table(results):
        print(line, file=sys.stderr)
    if not metrics:
        raise SystemExit("Nothing was measured: choose --parts that can run here.")
    metrics.emit()


# ---- bare sampling ----------------------------------------------------------------------------

def bare(model_name: str, sampler: str, episodes: int) -> dict[str, Any]:
    """Sampled tokens per second of ``sampler`` on the first prompts of ``episodes`` episodes,
    every row sampling :data:`MAX_NEW_TOKENS` tokens."""
    import torch

    from gem_trainer.models import load_model, load_tokenizer, resolve_dtype, resolve_model
    from gem_trainer.decoding.prefix_cache import PrefixCache

    folder = resolve_model(model_name)
    tokenizer = load_tokenizer(folder)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = load_model(folder, device=device, dtype=resolve_dtype("auto", device), trainable=False).eval()
    prompts = first_prompts(tokenizer, episodes)
    if sampler == "generate":
        def call() -> int:
            return generate(model, tokenizer, prompts)
    elif sampler == "generate_batch":
        def call() -> int:
            return generate_batch(model, prompts)
    else:
        decoder = decoder_class(sampler)(model, PrefixCache(10**9), stop_ids=set(), pad_id=tokenizer.pad_token_id,
                                         **decoder_options(sampler))

        def call() -> int:
            decoder.cache.clear()  # every call reads its prompts
            return sum(map(len, decoder.sample(prompts, max_new_tokens=MAX_NEW_TOKENS, temperature=1.0, top_p=1.0)))

    call()  # warm-up: captures graphs, picks kernels
    seconds, tokens = [], 0
    for _ in range(TIMED_CALLS):
        synchronize()
        started = time.perf_counter()
        tokens = call()
        synchronize()
        seconds.append(time.perf_counter() - started)
    rate = tokens / statistics.median(seconds)
    print(f"bare {sampler}, {episodes} rows: {rate:,.0f} tokens/s", file=sys.stderr, flush=True)
    return {"sampler": sampler, "episodes": episodes, "tokens_per_call": tokens, "seconds": seconds,
            "tokens_per_s": rate}


def first_prompts(tokenizer: Any, episodes: int) -> list[list[int]]:
    """The token ids of the first observation of ``episodes`` episodes, as `gem train` renders it."""
    import gem_core

    env = gem_core.make_vec([ENV_ID] * episodes, wrappers="concat_chat", wrapper_options={"tokenizer": tokenizer},
                            mode="sync")
    try:
        observations, _ = env.reset(seed=list(range(episodes)))
    finally:
        env.close()
    return [tokenizer.encode(text, add_special_tokens=False) for text in observations]


def generate(model: Any, tokenizer: Any, prompts: list[list[int]]) -> int:
    """transformers' ``generate`` on the left-padded prompts, every row to the end."""
    import torch

    width = max(map(len, prompts))
    ids = torch.full((len(prompts), width), tokenizer.pad_token_id)
    mask = torch.zeros_like(ids)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt):], mask[row, width - len(prompt):] = torch.tensor(prompt), 1
    device = next(model.parameters()).device
    with torch.inference_mode():
        out = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), max_new_tokens=MAX_NEW_TOKENS,
                             min_new_tokens=MAX_NEW_TOKENS, do_sample=True, temperature=1.0, top_k=0,
                             pad_token_id=tokenizer.pad_token_id)
    return (out.shape[1] - width) * len(prompts)


def generate_batch(model: Any, prompts: list[list[int]]) -> int:
    """transformers' continuous batching (``generate_batch``, paged attention) on the prompts."""
    import torch
    from transformers import GenerationConfig

    config = GenerationConfig(max_new_tokens=MAX_NEW_TOKENS, do_sample=True, temperature=1.0, top_k=0,
                              eos_token_id=None)
    with torch.inference_mode():
        outputs = model.generate_batch(prompts, generation_config=config, progress_bar=False)
    return sum(len(output.generated_tokens) for output in outputs.values())


def decoder_class(sampler: str) -> type:
    if sampler == "dynamic_cache":
        from _dynamic_cache_decoder import DynamicCacheDecoder

        return DynamicCacheDecoder
    from gem_trainer.decoding.cached_decoder import CachedDecoder

    return CachedDecoder


def decoder_options(sampler: str) -> dict[str, Any]:
    return {"cuda_graphs": False} if sampler == "buffer_no_graphs" else {}


# ---- gem train steps --------------------------------------------------------------------------

def train(model_name: str, sampler: str, episodes: int, steps: int) -> dict[str, Any]:
    """``steps`` steps of the default `gem train` run, sampling with ``sampler``."""
    from gem_trainer.training import trainer as trainer_module
    from gem_trainer.config import build_config

    with tempfile.TemporaryDirectory(prefix="gpu-rollout-") as folder:
        config = build_config({"model": model_name, "episodes_per_step": episodes, "steps": steps,
                               "max_new_tokens": MAX_NEW_TOKENS, "output_dir": folder})
        with swapped(trainer_module, "LocalPolicy", policy_class(sampler)):
            records = trainer_module.Trainer(config, progress=False).run().records
    timed = records[1:] or records
    rollout = sum(r["rollout_seconds"] for r in timed)
    sampling_rate = sum(r["tokens_per_second"] * r["rollout_seconds"] for r in timed) / rollout if rollout else 0.0
    step_s = statistics.median(r["rollout_seconds"] + r["train_seconds"] for r in timed)
    print(f"train {sampler}, {episodes} episodes: {sampling_rate:,.0f} tokens/s, {step_s:.2f} s per step",
          file=sys.stderr, flush=True)
    keys = ("step", "success_rate", "turns_per_episode", "tokens_per_second", "rollout_seconds", "train_seconds",
            "turns_trained", "train_tokens_per_second")
    return {"sampler": sampler, "episodes": episodes, "tokens_per_s": sampling_rate, "step_s": step_s,
            "records": [{k: r.get(k) for k in keys} for r in records]}


def policy_class(sampler: str) -> type:
    """`gem train`'s policy with its decoder swapped for ``sampler``'s (no decoder: transformers'
    generate)."""
    from gem_trainer.decoding.sampling import LocalPolicy

    class BenchPolicy(LocalPolicy):
        def set_model(self, model: Any) -> None:
            kept = model is self.model and self.decoder is not None  # LocalPolicy keeps the decoder too
            super().set_model(model)
            if sampler == "generate":
                self.decoder = None
            elif sampler != "buffer" and not kept:
                self.decoder = decoder_class(sampler)(model, self.prefix_cache, stop_ids=self.stop_ids,
                                                      pad_id=self.tokenizer.pad_token_id, **decoder_options(sampler))

    return BenchPolicy


# ---- the TRL adapter --------------------------------------------------------------------------

def trl_missing() -> str | None:
    import importlib.util

    if importlib.util.find_spec("trl") is None or importlib.util.find_spec("datasets") is None:
        return "trl is not installed (pip install -e '.[trl]')"
    return None


def trl(model_name: str, generation: str, episodes: int, steps: int, cuda: bool) -> dict[str, Any]:
    """``steps`` steps of the TRL adapter on the same task, as `gem trl config` sets it up."""
    from transformers import TrainerCallback

    from gem_adapters.common.options import EpisodeOptions
    from gem_adapters.trl.config import RunSettings, write_run
    from gem_adapters.trl.train import build_trainer, parse

    starts = max(1, episodes // TRL_GENERATIONS)
    with tempfile.TemporaryDirectory(prefix="gpu-rollout-trl-") as folder:
        written = write_run(RunSettings(
            env_ids=(ENV_ID,), model=model_name, out_dir=Path(folder), batch_size=starts,
            rollouts_per_start=TRL_GENERATIONS, train_size=starts * steps, val_size=1, response_length=256,
            learning_rate=1e-3, cpu=not cuda, options=EpisodeOptions(max_tokens_per_turn=MAX_NEW_TOKENS)))
        gem, grpo = parse(["--config", str(written.file), "--max_steps", str(steps),
                           "--use_transformers_continuous_batching", str(generation == "continuous_batching"),
                           "--disable_tqdm", "True", "--dataloader_num_workers", "0"])
        trainer = build_trainer(gem, grpo)
        clock = StepClock()
        trainer.add_callback(type("Timing", (TrainerCallback,), {
            "on_step_begin": lambda self, *a, **k: clock.begin(),
            "on_step_end": lambda self, *a, **k: clock.end()})())
        generate_turn = trainer._generate_single_turn

        def timed_turn(*args: Any, **kwargs: Any) -> Any:
            synchronize()
            started = time.perf_counter()
            completions, logprobs = generate_turn(*args, **kwargs)
            synchronize()
            clock.sampled(sum(map(len, completions)), time.perf_counter() - started)
            return completions, logprobs

        trainer._generate_single_turn = timed_turn
        trainer.train()
    timed = clock.steps[1:] or clock.steps
    tokens = sum(s["tokens"] for s in timed)
    sampling = sum(s["sampling_s"] for s in timed)
    figure = {"generation": generation, "sampler": f"trl_{generation}", "episodes": starts * TRL_GENERATIONS,
              "tokens_per_s": tokens / sampling if sampling else 0.0,
              "step_s": statistics.median(s["seconds"] for s in timed), "steps": clock.steps}
    print(f"trl {generation}, {figure['episodes']} episodes: {figure['tokens_per_s']:,.0f} tokens/s, "
          f"{figure['step_s']:.2f} s per step", file=sys.stderr, flush=True)
    return figure


class StepClock:
    """Seconds per optimiser step, and the tokens sampled within each, from TRL's callbacks."""

    def __init__(self) -> None:
        self.steps: list[dict[str, float]] = []
        self._started = 0.0

    def begin(self) -> None:
        self._started = time.perf_counter()
        self.steps.append({"seconds": 0.0, "tokens": 0, "sampling_s": 0.0})

    def sampled(self, tokens: int, seconds: float) -> None:
        if self.steps:
            self.steps[-1]["tokens"] += tokens
            self.steps[-1]["sampling_s"] += seconds

    def end(self) -> None:
        synchronize()
        self.steps[-1]["seconds"] = time.perf_counter() - self._started


# ---- shared -----------------------------------------------------------------------------------

def synchronize() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def release() -> None:
    """Let the next measurement start with the GPU's memory free."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


@contextlib.contextmanager
def swapped(module: Any, name: str, value: Any) -> Any:
    original = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, original)


def machine() -> dict[str, Any]:
    import torch
    import transformers

    facts = {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
             "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if torch.cuda.is_available():
        facts["gpu"] = torch.cuda.get_device_name()
    else:
        sys.path.insert(0, str(HERE.parent.parent))
        from bench.machine import cpu_model

        facts["cpu"] = f"{cpu_model()}, {len(os.sched_getaffinity(0))} cores"
    return facts


def save(results: dict[str, Any], out: Path) -> None:
    """Write what was measured so far (JSON and chart), and free what the measurement held."""
    (out / "results.json").write_text(json.dumps(results, indent=1))
    plot(results, out / "gpu_rollout.png")
    release()


def table(results: dict[str, Any]) -> list[str]:
    """The figures as text lines, one per measurement."""
    where = results["machine"].get("gpu") or results["machine"].get("cpu")
    lines = [f"gpu_rollout on {where}, {results['model']}, {results['env']}, {results['max_new_tokens']} tokens per turn"]
    for figure in results["bare"]:
        lines.append(f"  bare   {figure['sampler']:<18} {figure['episodes']:>3} rows      {figure['tokens_per_s']:>10,.0f} tokens/s")
    for part in ("train", "trl"):
        for figure in results[part]:
            lines.append(f"  {part:<6} {figure['sampler']:<18} {figure['episodes']:>3} episodes  "
                         f"{figure['tokens_per_s']:>10,.0f} tokens/s  {figure['step_s']:>7.2f} s/step")
    lines += [f"  {part} skipped: {why}" for part, why in results["skipped"].items()]
    return lines


def plot(results: dict[str, Any], path: Path) -> None:
    """Sampled tokens per second of every measurement, and seconds per step of the training ones."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12, 4.5), layout="constrained")
    rates, steps = figure.subplots(1, 2)
    for axes, parts, key, label in ((rates, ("bare", "train", "trl"), "tokens_per_s", "sampled tokens/s (log)"),
                                    (steps, ("train", "trl"), "step_s", "seconds per step (log)")):
        bars = [(f"{part} {f['sampler']} · {f['episodes']}", f[key]) for part in parts for f in results[part] if f[key] > 0]
        if not bars:
            axes.set_axis_off()
            continue
        names, values = zip(*bars)
        axes.barh(range(len(values)), values, color=[_colour(name) for name in names])
        axes.set_yticks(range(len(values)), names, fontsize=8)
        axes.invert_yaxis()
        axes.set_xscale("log")
        axes.set_xlim(left=10 ** math.floor(math.log10(min(values))))  # bars from a round decade below the least
        axes.set_xlabel(label)
        for y, value in enumerate(values):
            axes.text(value, y, f" {value:,.0f}" if value >= 10 else f" {value:.2f}", va="center", fontsize=7)
    where = results["machine"].get("gpu") or results["machine"].get("cpu")
    figure.suptitle(f"gpu_rollout: {results['model']} on {where}, {results['env']}, "
                    f"{results['max_new_tokens']} tokens per turn", fontsize=10)
    figure.savefig(path, dpi=110)


def _colour(name: str) -> str:
    for word, colour in (("buffer_no_graphs", "tab:olive"), ("buffer", "tab:green"), ("dynamic_cache", "tab:orange"),
                         ("generate_batch", "tab:purple"), ("trl", "tab:blue"), ("generate", "tab:red")):
        if word in name:
            return colour
    return "tab:gray"


if __name__ == "__main__":
    main()

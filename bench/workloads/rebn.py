"""Workload: ReBN advantages over 1,000,000 turns in episodes of varied lengths.

Run as ``python bench/workloads/rebn.py --impl ours [--quick] [--plot rebn.png]``. The reference
implementation has no batch ReBN function, so ``--impl reference`` exits with code 3. The last
stdout line is one JSON object ``{"metrics": {name: {"value", "unit", "better"}}}``:

* ``rebn_1m_turns_ms``: median wall time of ``rebn_flat`` (flat per-turn rewards and episode
  lengths in, advantages out), the form adapters use; the target is under 50 ms;
* ``rebn_1m_turns_cpu_ms``: the same run's median CPU time, less sensitive to other processes;
* ``rebn_1m_turns_nested_ms``: median wall time of ``rebn`` on nested Python lists, including
  the conversion of a million Python floats.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

from _protocol import no_counterpart, parser as workload_parser

TURNS = 1_000_000
TARGET_MS = 50.0


def episode_lengths(turns: int, seed: int = 0) -> np.ndarray:
    """Mostly 1-32 turns, one episode in a hundred up to 512 turns; adds up to ``turns``."""
    rng = np.random.default_rng(seed)
    draws = np.where(rng.random(turns) < 0.01, rng.integers(33, 513, turns), rng.integers(1, 33, turns))
    cut = int(np.searchsorted(np.cumsum(draws), turns))
    lengths = draws[: cut + 1].copy()
    lengths[-1] -= int(lengths.sum()) - turns
    return lengths[lengths > 0]


def timed(function: Callable[[], object], repeats: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each of ``repeats`` calls (after one warm-up call)."""
    function()
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return walls, cpus


def plot_scaling(path: str, repeats: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from rich.progress import track

    from gem_core.estimators import rebn_flat

    sizes = [10_000, 30_000, 100_000, 300_000, 1_000_000, 3_000_000]
    wall_ms, cpu_ms = [], []
    for size in track(sizes, description="ReBN at growing batch sizes"):
        lengths = episode_lengths(size)
        rewards = np.random.default_rng(1).random(size)
        walls, cpus = timed(lambda: rebn_flat(rewards, lengths, gamma=0.9), repeats)
        wall_ms.append(1000 * statistics.median(walls))
        cpu_ms.append(1000 * statistics.median(cpus))
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(sizes, wall_ms, "o-", label="wall time")
    ax.loglog(sizes, cpu_ms, "s--", label="CPU time")
    ax.plot([TURNS], [TARGET_MS], "rv", markersize=9, label=f"target: {TARGET_MS:.0f} ms at 1M turns")
    ax.set_xlabel("turns in the batch (episodes of 1-512 turns)")
    ax.set_ylabel("median time of rebn_flat, gamma 0.9 (ms)")
    ax.set_title("ReBN advantages")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}", file=sys.stderr)


def main() -> None:
    parser = workload_parser(__doc__, "fewer repeats")
    parser.add_argument("--repeats", type=int, default=None, help="timed calls per measurement")
    parser.add_argument("--plot", metavar="PNG", help="also plot time against batch size into PNG")
    args = parser.parse_args()
    if args.impl == "reference":
        no_counterpart("The reference implementation has no batch ReBN function to measure.")
    from gem_core.estimators import rebn, rebn_flat

    repeats = args.repeats or (5 if args.quick else 30)
    lengths = episode_lengths(TURNS)
    rewards = np.random.default_rng(1).random(TURNS)
    walls, cpus = timed(lambda: rebn_flat(rewards, lengths, gamma=0.9), repeats)
    walls.sort()
    nested = [e.tolist() for e in np.split(rewards, np.cumsum(lengths)[:-1])]  # Python floats
    nested_walls, _ = timed(lambda: rebn(nested, gamma=0.9), max(3, repeats // 5))
    ms = 1000 * statistics.median(walls)
    print(f"ReBN over {TURNS:,} turns in {lengths.size:,} episodes of 1-{lengths.max()} turns: "
          f"median {ms:.1f} ms wall (fastest {1000 * walls[0]:.1f} ms), "
          f"{1000 * statistics.median(cpus):.1f} ms CPU "
          f"(target {TARGET_MS:.0f} ms); nested lists {1000 * statistics.median(nested_walls):.0f} ms")
    if args.plot:
        plot_scaling(args.plot, max(3, repeats // 3))
    print(json.dumps({"metrics": {
        "rebn_1m_turns_ms": {"value": ms, "unit": "ms", "better": "lower"},
        "rebn_1m_turns_cpu_ms": {"value": 1000 * statistics.median(cpus), "unit": "ms", "better": "lower"},
        "rebn_1m_turns_nested_ms": {"value": 1000 * statistics.median(nested_walls), "unit": "ms", "better": "lower"},
    }}))


if __name__ == "__main__":
    main()

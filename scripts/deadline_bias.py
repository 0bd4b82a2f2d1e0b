"""What a deadline does to the mix of easy and hard episodes a trainer sees, and what carry-over
and spares do to it: the figure of docs/wrappers-and-vector-envs.md.

A task of two kinds of episode, drawn from the seed half and half: easy ones end in
:data:`EASY_TURNS` turns, hard ones in 4 to 12; every turn takes :data:`TURN_S` seconds of the
environment's time. Each policy: :data:`STEPS` collections of :data:`BATCH` episodes on a vector
environment of as many slots (async mode, a scripted policy), counting among the episodes each
returns that a trainer would train on (the valid ones) the share of hard ones:

* no deadline: every episode ends; the true mix, at the pace of the slowest episode;
* a deadline of :data:`DEADLINE_TURNS` turns' time: the episodes still running then fail and are
  dropped, most of them hard;
* spares (:data:`SPARES` more episodes started, the first :data:`BATCH` to end kept): the slow
  ones are the ones left out;
* the deadline with carry-over: the episodes still running go on in the next collection, so every
  episode is trained on once; hard ones arrive a collection or two late (their later turns from a
  newer policy), and the mix stays the true one.

Run ``python scripts/deadline_bias.py`` (about a minute); it writes ``--out`` (default
docs/deadline-bias.png) and prints the figures as CSV (``--csv FILE`` writes them there too).
"""

from __future__ import annotations

import argparse
import csv
import io
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import gem_core
from gem_core import Env

EASY_TURNS = 2
HARD_TURNS = (4, 12)
TURN_S = 0.01
BATCH = 16
SPARES = 8
DEADLINE_TURNS = 8
STEPS = 24
REPO = Path(__file__).resolve().parent.parent


class EasyOrHard(Env):
    """Half the seeds easy (:data:`EASY_TURNS` turns), half hard (4 to 12 turns); each turn
    waits :data:`TURN_S` seconds."""

    blocking = True

    def reset(self, seed=None, **options):
        rng = random.Random(seed)
        self.hard = rng.random() < 0.5
        self.length, self.t = (rng.randint(*HARD_TURNS) if self.hard else EASY_TURNS), 0
        return "hard" if self.hard else "easy", {}

    def step(self, action):
        time.sleep(TURN_S)
        self.t += 1
        return "go on", 1.0, self.t >= self.length, False, {"hard": self.hard}


def run(condition: str) -> dict[str, Any]:
    """The share of hard episodes among those trained on, the episodes trained on per second, and
    the seconds per collection."""
    options: dict[str, Any] = {}
    slots = BATCH
    if condition in ("deadline", "carry-over"):
        options["deadline"] = DEADLINE_TURNS * TURN_S
    if condition == "carry-over":
        options["carry_over"] = True
    if condition == "spares":
        options["spares"] = SPARES
        slots += SPARES
    hard = trained = returned = 0
    seconds = []
    with gem_core.make_vec([EasyOrHard] * slots, mode="async") as vec:
        for step in range(STEPS):
            seeds = [step * 1000 + k for k in range(slots)]
            started = time.perf_counter()
            episodes = gem_core.collect_episodes(vec, lambda obs: ["a"] * len(obs), BATCH, seed=seeds,
                                                 policy_version=step, **options)
            seconds.append(time.perf_counter() - started)
            returned += len(episodes)
            for episode in episodes:
                if episode.valid:
                    trained += 1
                    hard += episode.turns[0].observation == "hard"
    return {"condition": condition, "hard_share": hard / max(trained, 1), "trained": trained,
            "returned": returned, "trained_per_second": trained / sum(seconds),
            "seconds_per_collection": statistics.median(seconds)}


CONDITIONS = {
    "no deadline": "none",
    f"deadline ({DEADLINE_TURNS} turns)": "deadline",
    f"spares (+{SPARES})": "spares",
    "deadline + carry-over": "carry-over",
}


def plot(results: list[dict[str, Any]], path: Path) -> None:
    from matplotlib.figure import Figure  # no pyplot: no global state, no display needed

    figure = Figure(figsize=(9, 3.6), layout="constrained")
    share, pace = figure.subplots(1, 2)
    labels = list(CONDITIONS)
    colors = ["#4c72b0", "#c44e52", "#dd8452", "#55a868"]
    played = 100 * results[0]["hard_share"]  # without a deadline every episode started is trained on
    share.barh(labels, [100 * r["hard_share"] for r in results], color=colors)
    share.axvline(played, color="black", linewidth=1, linestyle="--")
    share.text(played + 1, len(labels) - 0.55, "the mix played", va="bottom", fontsize=8)
    share.set_xlim(0, 75)
    share.set_xlabel("hard episodes among those trained on (%)")
    share.invert_yaxis()
    for y, r in enumerate(results):
        share.text(max(100 * r["hard_share"], played) + 1, y, f"{100 * r['hard_share']:.0f}% of {r['trained']}",
                   va="center", fontsize=8)
    pace.barh(labels, [r["trained_per_second"] for r in results], color=colors)
    pace.set_xlabel("episodes trained on per second")
    pace.set_yticklabels([])
    pace.invert_yaxis()
    figure.suptitle(f"{BATCH} episodes per collection, half easy ({EASY_TURNS} turns), half hard "
                    f"({HARD_TURNS[0]}-{HARD_TURNS[1]} turns); {STEPS} collections each", fontsize=10)
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "deadline-bias.png")
    parser.add_argument("--csv", type=Path, default=None)
    args = parser.parse_args()
    results = []
    for label, condition in CONDITIONS.items():
        print(f"{label}...", file=sys.stderr)
        results.append({"label": label, **run(condition)})
    table = io.StringIO()
    writer = csv.DictWriter(table, fieldnames=list(results[0]))
    writer.writeheader()
    writer.writerows(results)
    print(table.getvalue(), end="")
    if args.csv is not None:
        args.csv.write_text(table.getvalue())
    plot(results, args.out)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()

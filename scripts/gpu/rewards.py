"""The metric of every training step of a GPU smoke run, printed and written to OUT/rewards.json.

    python scripts/gpu/rewards.py OUT NAME --log VALUE_REGEX [--step STEP_REGEX]   # from OUT/train.log
    python scripts/gpu/rewards.py OUT NAME --tensorboard TAG                       # from OUT/tensorboard

With ``--log`` and no ``--step``, the n-th line that matches is step n. Exits non-zero when no step
was found.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys


def from_log(path: str, value: str, step: str | None) -> dict[int, float]:
    found: dict[int, float] = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        number, at = re.search(value, line), re.search(step, line) if step else None
        if number and (at or not step):
            found[int(at.group(1)) if at else len(found) + 1] = float(number.group(1))
    return found


def from_tensorboard(folder: str, tag: str) -> dict[int, float]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    found: dict[int, float] = {}
    for events_folder in sorted({os.path.dirname(p) for p in glob.glob(f"{folder}/**/events.*", recursive=True)}):
        events = EventAccumulator(events_folder)
        events.Reload()
        if tag in events.Tags()["scalars"]:
            found.update({e.step: e.value for e in events.Scalars(tag)})
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("name", help="what the value is, e.g. 'mean reward'")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--log", metavar="VALUE_REGEX", help="a regex whose group 1 is the value")
    source.add_argument("--tensorboard", metavar="TAG")
    parser.add_argument("--step", metavar="STEP_REGEX", help="with --log: a regex whose group 1 is the step")
    parser.add_argument("--key", default="reward", help="rewards.json holds KEY_per_step (default: reward)")
    args = parser.parse_args()
    values = (from_tensorboard(f"{args.out}/tensorboard", args.tensorboard) if args.tensorboard
              else from_log(f"{args.out}/train.log", args.log, args.step))
    for step in sorted(values):
        print(f"step {step}: {args.name} {values[step]:.4f}")
    with open(f"{args.out}/rewards.json", "w") as file:
        json.dump({f"{args.key}_per_step": [[s, values[s]] for s in sorted(values)]}, file)
    if not values:
        return f"no {args.name} was logged; see the training log above"  # type: ignore[return-value]
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Workload: `import` plus `make` of a built-in environment, in a fresh interpreter.

Protocol shared by every workload script: run as
``python bench/workloads/<name>.py --impl ours|reference [--quick]`` with the interpreter of the
implementation under test; print one JSON object ``{"metrics": {name: {"value", "unit",
"better"}}}`` on the last line of stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

SNIPPETS = {
    "ours": "import gem_core as gem",
    "reference": "import gem",
}
ENV_ID = "game:GuessTheNumber-v0-easy"


def measure_once(impl: str) -> float:
    code = (
        "import time\n"
        "start = time.perf_counter()\n"
        f"{SNIPPETS[impl]}\n"
        f"env = gem.make({ENV_ID!r})\n"
        "env.reset(seed=0)\n"
        "print(time.perf_counter() - start)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=sorted(SNIPPETS), default="ours")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()
    repeats = args.repeats or (3 if args.quick else 10)
    times = [measure_once(args.impl) for _ in range(repeats)]
    print(json.dumps({"metrics": {
        "import_make_s": {"value": statistics.median(times), "unit": "s", "better": "lower"},
    }}))


if __name__ == "__main__":
    main()

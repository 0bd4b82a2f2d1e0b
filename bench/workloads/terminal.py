"""Workload: terminal environments: command round trips and episodes of a shipped task.

Run as ``python bench/workloads/terminal.py --impl ours [--quick]``. The reference implementation's
terminal environment needs Docker and ships no task, so ``--impl reference`` exits with code 3.
The last stdout line is one JSON object ``{"metrics": {name: {"value", "unit", "better"}}}``:

* ``terminal_round_trip_p50_ms``: one trivial command (``true``) in the persistent shell of a
  running sandbox, host to shell and back; the target is 5 ms or less;
* ``terminal_fresh_sandbox_p50_ms``: the same command with a fresh sandbox per command (start,
  run, stop), what a shell-less design pays per command;
* ``terminal_episodes_per_s`` and ``terminal_episodes_per_s_c4``: episodes of the shipped task
  ``csv-column-sum`` (reset, its solution as one command, ``<finish>`` and grading), one at a
  time and four at once.

With podman installed (and the test base image built: ``python -m tests.terminal.images``), the
same on the container backend, the task's ``FROM`` mapped to that local image:

* ``terminal_container_first_observation_p50_ms``: ``reset()`` of a cached image, container start
  to the first observation;
* ``terminal_container_round_trip_p50_ms``: one ``true`` in the container's persistent shell;
* ``terminal_container_episodes_per_s``: episodes of ``csv-column-sum``, one at a time.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _protocol import no_counterpart, parser as workload_parser

TASK = "csv-column-sum"
ROOT = Path(__file__).resolve().parents[2]


def timed(function, n: int, label: str) -> list[float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
        if (i + 1) % 50 == 0 or i + 1 == n:
            print(f"\r{label} {i + 1}/{n}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return times


def episodes_per_second(episodes: int, workers: int) -> float:
    from gem_envs.terminal.env import TerminalEnv

    envs = [TerminalEnv(task=TASK) for _ in range(workers)]

    def play(env, count: int) -> None:  # each worker plays its own environment
        for _ in range(count):
            env.reset()
            assert env.run_solution().exit_code == 0
            assert env.step("<finish>")[1] == 1.0

    counts = [episodes // workers + (i < episodes % workers) for i in range(workers)]
    try:
        start = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(play, envs, counts))
        return episodes / (time.perf_counter() - start)
    finally:
        for env in envs:
            env.close()


def container_metrics(quick: bool) -> dict:
    """The container backend's figures, or none (with a note) when podman or the base is missing."""
    import shutil

    if shutil.which("podman") is None:
        print("podman is not installed: no container figures", file=sys.stderr)
        return {}
    from gem_envs.terminal.env import TerminalEnv

    sys.path.insert(0, str(ROOT))  # the tests' image recipe
    from tests.terminal.images import BASE, base_images, exists

    if not exists(BASE):
        print(f"no test base image {BASE} (python -m tests.terminal.images): no container figures", file=sys.stderr)
        return {}
    env = TerminalEnv(task=TASK, backend="podman", base_images=base_images())
    resets, commands, episodes = (5, 100, 5) if quick else (20, 1000, 20)
    try:
        env.reset()  # builds the image once
        first = timed(env.reset, resets, "container reset")
        env.sandbox.run("true")
        round_trip = timed(lambda: env.sandbox.run("true"), commands, "container shell")

        def episode() -> None:
            env.reset()
            assert env.run_solution().exit_code == 0
            assert env.step("<finish>")[1] == 1.0

        start = time.perf_counter()
        for _ in range(episodes):
            episode()
        rate = episodes / (time.perf_counter() - start)
    finally:
        env.close()
    return {
        "terminal_container_first_observation_p50_ms": {"value": statistics.median(first) * 1000, "unit": "ms",
                                                        "better": "lower"},
        "terminal_container_round_trip_p50_ms": {"value": statistics.median(round_trip) * 1000, "unit": "ms",
                                                 "better": "lower"},
        "terminal_container_episodes_per_s": {"value": rate, "unit": "episodes/s", "better": "higher"},
    }


def main() -> None:
    parser = workload_parser(__doc__, "fewer commands and episodes")
    args = parser.parse_args()
    if args.impl == "reference":
        no_counterpart("The reference implementation's terminal environment needs Docker and ships no task to measure.")
    from gem_core.sandbox.python import Limits
    from gem_envs.terminal.sandbox import TerminalSandbox

    limits = Limits(timeout=30.0, max_processes=64)
    commands, fresh, episodes = (200, 10, 8) if args.quick else (2000, 50, 40)
    with TerminalSandbox(limits) as sandbox:
        sandbox.run("true")
        persistent = timed(lambda: sandbox.run("true"), commands, "persistent shell")

    def fresh_sandbox() -> None:
        with TerminalSandbox(limits) as box:
            box.execute("true", timeout=30.0)

    fresh_times = timed(fresh_sandbox, fresh, "fresh sandbox")
    sequential = episodes_per_second(episodes, 1)
    concurrent = episodes_per_second(episodes, 4)
    metrics = {
        "terminal_round_trip_p50_ms": {"value": statistics.median(persistent) * 1000, "unit": "ms", "better": "lower"},
        "terminal_fresh_sandbox_p50_ms": {"value": statistics.median(fresh_times) * 1000, "unit": "ms",
                                          "better": "lower"},
        "terminal_episodes_per_s": {"value": sequential, "unit": "episodes/s", "better": "higher"},
        "terminal_episodes_per_s_c4": {"value": concurrent, "unit": "episodes/s", "better": "higher"},
        **container_metrics(args.quick),
    }
    print(json.dumps({"metrics": metrics}))


if __name__ == "__main__":
    main()

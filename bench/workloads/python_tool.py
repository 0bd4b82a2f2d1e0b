"""Workload: the Python tool running a trivial snippet, one call at a time and concurrently.

Run as ``python bench/workloads/python_tool.py --impl ours|reference [--quick]`` with the
interpreter of the implementation under test. Metrics: latency p50 and p95 of sequential calls,
and throughput (calls per second) with 1, 4 and 16 calls in flight. ``ours`` runs every call
sandboxed, from warm bubblewrap sandboxes (a fresh child each call, as ``PythonTool`` does by
default); ``reference`` runs the reference's ``PythonCodeTool`` as it ships
(``sandbox_type="none"``: no sandbox; its bwrap mode cannot start a venv interpreter). Each
concurrency level is measured after an untimed round of as many overlapping calls as it has in
flight, so that ours is measured with its sandboxes warm, as in a training run (the reference
keeps nothing between calls).
The last stdout line is the JSON object of the workload protocol; progress goes to stderr.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable

from _protocol import parser as workload_parser, percentile

ACTION = "<python>print(1 + 1)</python>"
WARM_UP_ACTION = "<python>import time\ntime.sleep(0.3)\nprint(1 + 1)</python>"  # overlapping calls


def ours() -> Callable[..., None]:
    from gem_core.tools import PythonTool

    tool = PythonTool(timeout=5)

    def call(action: str = ACTION) -> None:
        output = tool.execute(tool.parse(action))
        assert output.success and output.observation == "Code execution result: 2\n\n", output
        assert output.info["sandboxed"]

    return call


def reference() -> Callable[..., None]:
    from gem.tools.python_code_tool import PythonCodeTool

    tool = PythonCodeTool(timeout=5)
    os.chdir(tempfile.mkdtemp(prefix="gem-bench-"))  # it makes a scratch directory in the cwd per call

    def call(action: str = ACTION) -> None:
        valid, error, observation, _ = tool.execute_action(action)
        assert valid and not error and observation == "Code execution result: 2\n\n", observation

    return call


def latencies(call: Callable[..., None], n: int) -> list[float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
        _progress(f"sequential {i + 1}/{n}")
    return times


def warm_up(call: Callable[..., None], concurrency: int) -> None:
    """Untimed: ``concurrency`` calls that overlap (each sleeps a moment), so that ours has as
    many warm sandboxes as calls in flight."""
    threads = [threading.Thread(target=call, args=(WARM_UP_ACTION,)) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def throughput(call: Callable[..., None], concurrency: int, calls: int) -> float:
    """Calls per second with ``concurrency`` threads sharing ``calls`` calls."""
    remaining = [calls]
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if remaining[0] == 0:
                    return
                remaining[0] -= 1
            call()

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    _progress(f"{concurrency} in flight: {calls / elapsed:.1f} calls/s")
    return calls / elapsed


def _progress(message: str) -> None:
    print(f"\r{message:<60}", end="", file=sys.stderr, flush=True)


def main() -> None:
    parser = workload_parser(__doc__, "fewer calls (about 10 s in all)")
    args = parser.parse_args()
    call = ours() if args.impl == "ours" else reference()
    call()  # warm up: the first call probes the interpreter and the sandbox
    sequential = 20 if args.quick else 100
    per_level = 16 if args.quick else 64
    times = latencies(call, sequential)
    metrics = {
        "python_call_p50_ms": {"value": statistics.median(times) * 1000, "unit": "ms", "better": "lower"},
        "python_call_p95_ms": {"value": percentile(times, 0.95) * 1000, "unit": "ms", "better": "lower"},
    }
    for concurrency in (1, 4, 16):
        warm_up(call, concurrency)
        rate = throughput(call, concurrency, max(per_level, concurrency))
        metrics[f"python_calls_per_s_c{concurrency}"] = {"value": rate, "unit": "calls/s", "better": "higher"}
    print(file=sys.stderr)
    print(json.dumps({"metrics": metrics}))


if __name__ == "__main__":
    main()

"""Where a warm Python tool call's time goes: CPU per call of this process, of the sandbox's
server and of the children it forks (one per call), beside the wall time per call.

Run as ``python bench/python_tool_cpu.py [--calls N]``. On a loaded machine the wall time grows
with the other processes' demand for the CPUs while the CPU times stay put: they bound the calls
per second that the machine's cores can serve.
"""

from __future__ import annotations

import argparse
import os
import time

ACTION = "print(1 + 1)"


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(the process's own CPU seconds, those of its children it has reaped)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick


def server_pid(bwrap_pid: int) -> int:
    """The sandbox's server: bwrap starts an init, which starts the server."""
    pid = bwrap_pid
    for _ in range(2):
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            pid = int(f.read().split()[0])
    return pid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    from gem_core.sandbox import run_python, warm_python

    run_python(ACTION)  # starts the sandbox
    (pool,) = warm_python._pools.values()
    (sandbox,) = pool._idle
    server = server_pid(sandbox.process.pid)
    own0, children0 = cpu_seconds(server)
    host0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(args.calls):
        assert run_python(ACTION).stdout == "2\n"
    wall, host = time.perf_counter() - wall0, time.process_time() - host0
    own, children = cpu_seconds(server)
    per_call = {"wall": wall, "this process": host, "sandbox server": own - own0,
                "forked children": children - children0}
    print(", ".join(f"{name} {seconds / args.calls * 1000:.2f} ms" for name, seconds in per_call.items()),
          f"per call over {args.calls} calls on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()

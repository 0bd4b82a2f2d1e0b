"""Running workload scripts: one run, the workload protocol, and the alternating schedule."""

from __future__ import annotations

import json
import math
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.discovery import Workload

REPO = Path(__file__).resolve().parent.parent
NO_COUNTERPART_EXIT = 3
PROTOCOL = (
    'the last stdout line must be one JSON object {"metrics": {"<metric>": {"value": <number>, '
    '"unit": "<unit>", "better": "higher" | "lower"}}}'
)


class ProtocolError(ValueError):
    """A workload's output that does not follow the workload protocol."""


@dataclass(frozen=True)
class Metric:
    value: float
    unit: str
    better: str  # "higher" or "lower"


@dataclass
class Run:
    """One run of one workload script with one implementation."""

    impl: str  # "ours" or "reference"
    repeat: int
    command: list[str]
    wall_s: float
    metrics: dict[str, Metric] = field(default_factory=dict)
    error: str | None = None  # why the run failed
    no_counterpart: str | None = None  # the script's message when it exited 3
    stderr_tail: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None and self.no_counterpart is None


def parse_metrics(stdout: str) -> dict[str, Metric]:
    """The metrics a workload printed on its last non-empty stdout line."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        raise ProtocolError(f"no output; {PROTOCOL}")
    try:
        payload = json.loads(lines[-1])
    except json.JSONDecodeError:
        raise ProtocolError(f"last line is not JSON ({lines[-1][:80]!r}); {PROTOCOL}") from None
    raw = payload.get("metrics") if isinstance(payload, dict) else None
    if not isinstance(raw, dict) or not raw:
        raise ProtocolError(f"no metrics in {lines[-1][:80]!r}; {PROTOCOL}")
    metrics = {}
    for name, entry in raw.items():
        if not isinstance(entry, dict):
            raise ProtocolError(f"metric {name!r} is not an object; {PROTOCOL}")
        value, unit, better = entry.get("value"), entry.get("unit"), entry.get("better")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ProtocolError(f"metric {name!r} has value {value!r}, not a finite number; {PROTOCOL}")
        if not isinstance(unit, str):
            raise ProtocolError(f"metric {name!r} has unit {unit!r}, not a string; {PROTOCOL}")
        if better not in ("higher", "lower"):
            raise ProtocolError(f"metric {name!r} has better={better!r}; {PROTOCOL}")
        metrics[name] = Metric(float(value), unit, better)
    return metrics


def run_once(script: Path, python: Path, impl: str, *, repeat: int, quick: bool, timeout: float) -> Run:
    """Run ``script`` once with ``python`` as implementation ``impl``."""
    command = [str(python), str(script), "--impl", impl, *(["--quick"] if quick else [])]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    except subprocess.TimeoutExpired as e:
        return Run(impl, repeat, command, time.perf_counter() - start,
                   error=f"timed out after {timeout:g} s (raise --timeout)", stderr_tail=_tail(e.stderr))
    except OSError as e:
        return Run(impl, repeat, command, time.perf_counter() - start, error=f"could not start {python}: {e}")
    wall_s = time.perf_counter() - start
    stderr_tail = _tail(done.stderr)
    if done.returncode == NO_COUNTERPART_EXIT and impl == "reference":
        message = _last_line(done.stderr) or _last_line(done.stdout) or "no reference counterpart"
        return Run(impl, repeat, command, wall_s, no_counterpart=message)
    if done.returncode != 0:
        reason = _last_line(done.stderr) or _last_line(done.stdout) or "no output"
        return Run(impl, repeat, command, wall_s, error=f"exit code {done.returncode}: {reason}",
                   stderr_tail=stderr_tail)
    try:
        metrics = parse_metrics(done.stdout)
    except ProtocolError as e:
        return Run(impl, repeat, command, wall_s, error=str(e), stderr_tail=stderr_tail)
    return Run(impl, repeat, command, wall_s, metrics=metrics)


def schedule(repeats: int, impls: list[str]) -> list[tuple[int, str]]:
    """(repeat, impl) pairs, the order of implementations flipping every repeat (ABBA), so a slow
    drift of the machine weighs on both alike."""
    order = []
    for repeat in range(repeats):
        order += [(repeat, impl) for impl in (impls if repeat % 2 == 0 else impls[::-1])]
    return order


def run_workload(
    workload: Workload,
    interpreters: dict[str, Path],
    *,
    repeats: int,
    quick: bool,
    timeout: float,
    on_step: Callable[[str, int], None] = lambda description, advance: None,
) -> list[Run]:
    """Every run of one workload. An implementation that fails, or has no counterpart, is not run
    again; ``on_step`` hears of each run starting (advance 0) and of every run done or dropped."""
    assert workload.script is not None, "planned workloads have no script to run"
    runs: list[Run] = []
    stopped: set[str] = set()
    for repeat, impl in schedule(repeats, list(interpreters)):
        if impl in stopped:
            on_step("", 1)
            continue
        on_step(f"{workload.name} · {impl} ({repeat + 1}/{repeats})", 0)
        run = run_once(workload.script, interpreters[impl], impl, repeat=repeat, quick=quick, timeout=timeout)
        runs.append(run)
        if not run.ok:
            stopped.add(impl)
        on_step("", 1)
    return runs


def _last_line(text: str | None) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _tail(text: str | bytes | None, lines: int = 20) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return "\n".join((text or "").splitlines()[-lines:])

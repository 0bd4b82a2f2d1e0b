"""The PNG bar chart of speedups over the reference (log scale, a line at 1x)."""

from __future__ import annotations

import math
from pathlib import Path

from bench import reference
from bench.machine import summary_line
from bench.report import format_speedup
from bench.results import WorkloadSummary


def write_speedup_chart(path: Path, summaries: list[WorkloadSummary], *, machine: dict) -> None:
    """One bar per metric with a reference figure; metrics and workloads without one are listed
    with the reason in place of a bar."""
    from matplotlib.figure import Figure  # no pyplot: no global state, no display needed
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    labels, speedups, notes = [], [], []
    for s in summaries:
        for m in s.metrics:
            labels.append(f"{s.name} · {m.name}")
            speedups.append(m.speedup)
            notes.append(s.status if m.speedup is None else "")
        if not s.metrics:
            labels.append(s.name)
            speedups.append(None)
            notes.append(s.status)

    known = [v for v in speedups if v]
    low = min([0.5, *known]) / 1.5
    high = max([2.0, *known]) * 3  # room for the labels
    figure = Figure(figsize=(9, 1.2 + 0.45 * max(len(labels), 1)), layout="constrained")
    axes = figure.add_subplot()
    axes.set_xscale("log")
    axes.set_xlim(low, high)
    positions = range(len(labels))
    for y, value, note in zip(positions, speedups, notes):
        if value:
            axes.barh(y, value - 1, left=1, height=0.6, color="tab:green" if value >= 1 else "tab:red")
            axes.text(value * 1.05 if value >= 1 else value / 1.05, y, format_speedup(value),
                      va="center", ha="left" if value >= 1 else "right", fontsize=9)
        else:
            axes.text(1.1, y, note or "no figure", va="center", ha="left", fontsize=9, color="gray")
    axes.axvline(1, color="black", linewidth=1)
    decades = math.log10(high / low)
    axes.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 3 else (1.0,)))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}x"))
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_yticks(list(positions), labels)
    axes.set_ylim(len(labels) - 0.5, -0.5)  # first workload on top
    axes.set_xlabel(f"speedup over {reference.LABEL} (above 1x: ours is better)")
    axes.set_title(f"{machine['date'][:10]} · {summary_line(machine)}", fontsize=10)
    axes.grid(axis="x", which="both", alpha=0.3)
    figure.savefig(path, dpi=120)

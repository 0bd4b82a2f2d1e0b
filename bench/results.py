"""Summaries of the runs (medians, ratio, speedup) and the JSON and CSV files that hold them."""

from __future__ import annotations

import csv
import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.discovery import Workload
from bench.runner import Run

SCHEMA_VERSION = 1


@dataclass
class MetricSummary:
    """One metric of one workload: every sample of each implementation."""

    workload: str
    name: str
    unit: str
    better: str
    ours: list[float] = field(default_factory=list)
    reference: list[float] = field(default_factory=list)

    @property
    def ours_median(self) -> float | None:
        return statistics.median(self.ours) if self.ours else None

    @property
    def reference_median(self) -> float | None:
        return statistics.median(self.reference) if self.reference else None

    @property
    def ratio(self) -> float | None:
        """ours / reference, of the medians."""
        return _divide(self.ours_median, self.reference_median)

    @property
    def speedup(self) -> float | None:
        """How many times better ours is: above 1 means ours is better, whichever way the metric goes."""
        if self.better == "higher":
            return _divide(self.ours_median, self.reference_median)
        return _divide(self.reference_median, self.ours_median)

    def to_dict(self) -> dict:
        return {
            "name": self.name, "unit": self.unit, "better": self.better,
            "ours": {"samples": self.ours, "median": self.ours_median},
            "reference": {"samples": self.reference, "median": self.reference_median},
            "ratio": self.ratio, "speedup": self.speedup,
        }


@dataclass
class WorkloadSummary:
    name: str
    description: str
    status: str  # "ok", "ours only", "failed" or "skipped"
    note: str
    metrics: list[MetricSummary]
    runs: list[Run]

    def to_dict(self) -> dict:
        return {
            "name": self.name, "description": self.description, "status": self.status, "note": self.note,
            "metrics": [m.to_dict() for m in self.metrics],
            "runs": [asdict(run) for run in self.runs],
        }


def summarise(workload: Workload, runs: list[Run], *, reference_run: bool) -> WorkloadSummary:
    """Gather the samples of ``runs`` per metric and say how the workload went."""
    if not workload.runs:
        note = workload.skipped or f"not written yet (bench/workloads/{workload.name}.py)"
        return WorkloadSummary(workload.name, workload.description, "skipped", note, [], runs)
    metrics: dict[str, MetricSummary] = {}
    for run in sorted(runs, key=lambda r: r.impl != "ours"):  # ours first: its units and order win
        for name, metric in run.metrics.items():
            summary = metrics.setdefault(name, MetricSummary(workload.name, name, metric.unit, metric.better))
            getattr(summary, run.impl).append(metric.value)
    failures = [f"{run.impl}: {run.error}" for run in runs if run.error]
    no_counterpart = next((run.no_counterpart for run in runs if run.no_counterpart), None)
    if failures:
        status, note = "failed", "; ".join(failures)
    elif no_counterpart:
        status, note = "ours only", f"no reference counterpart: {no_counterpart}"
    elif not reference_run:
        status, note = "ours only", "reference not run"
    else:
        status, note = "ok", ""
    return WorkloadSummary(workload.name, workload.description, status, note, list(metrics.values()), runs)


def write_json(path: Path, summaries: list[WorkloadSummary], *, machine: dict, settings: dict) -> None:
    document = {
        "schema": SCHEMA_VERSION,
        "machine": machine,
        "settings": settings,
        "workloads": [s.to_dict() for s in summaries],
    }
    path.write_text(json.dumps(document, indent=2) + "\n")


CSV_COLUMNS = ["workload", "metric", "unit", "better", "ours_median", "reference_median", "ratio", "speedup",
               "ours_samples", "reference_samples", "status", "note"]


def write_csv(path: Path, summaries: list[WorkloadSummary]) -> None:
    """One row per metric; a workload with no metrics (skipped, failed early) gets one row."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        for s in summaries:
            for m in s.metrics:
                writer.writerow([s.name, m.name, m.unit, m.better, m.ours_median, m.reference_median, m.ratio,
                                 m.speedup, len(m.ours), len(m.reference), s.status, s.note])
            if not s.metrics:
                writer.writerow([s.name, "", "", "", "", "", "", "", 0, 0, s.status, s.note])


def _divide(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator

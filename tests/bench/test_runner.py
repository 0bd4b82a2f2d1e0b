"""Running real workload scripts in subprocesses, and how each outcome is summarised."""

import sys
from pathlib import Path

import pytest

from bench.discovery import Workload
from bench.results import summarise
from bench.runner import run_once, run_workload
from tests.bench.conftest import metrics_line

PYTHON = Path(sys.executable)
BOTH = {"ours": PYTHON, "reference": PYTHON}


def workload(script: Path) -> Workload:
    return Workload(script.stem, "test", script)


def test_runs_alternate_and_samples_gather_per_metric(workloads_dir):
    script = workloads_dir("latency", f"""
        value = 0.5 if args.impl == "ours" else 2.0
        print("some chatter")
        {metrics_line(latency_s=("value", "s", "lower"), rate=("1 / value", "ops/s", "higher"))}
    """)
    steps = []
    runs = run_workload(workload(script), BOTH, repeats=2, quick=False, timeout=60,
                        on_step=lambda description, advance: steps.append((description, advance)))
    assert [(r.impl, r.repeat) for r in runs] == [("ours", 0), ("reference", 0), ("reference", 1), ("ours", 1)]
    assert all(r.ok and r.wall_s > 0 for r in runs)
    assert sum(advance for _, advance in steps) == 4
    assert [d for d, a in steps if a == 0][:2] == ["latency · ours (1/2)", "latency · reference (1/2)"]

    summary = summarise(workload(script), runs, reference_run=True)
    assert summary.status == "ok" and summary.note == ""
    latency, rate = summary.metrics
    assert latency.ours == [0.5, 0.5] and latency.reference == [2.0, 2.0]
    assert latency.speedup == pytest.approx(4.0) and latency.ratio == pytest.approx(0.25)
    assert rate.better == "higher" and rate.speedup == pytest.approx(4.0)


def test_quick_is_passed_to_the_script(workloads_dir):
    script = workloads_dir("flags", metrics_line(quick=("float(args.quick)", "", "higher")))
    assert run_once(script, PYTHON, "ours", repeat=0, quick=True, timeout=60).metrics["quick"].value == 1.0
    assert run_once(script, PYTHON, "ours", repeat=0, quick=False, timeout=60).metrics["quick"].value == 0.0


def test_exit_3_from_the_reference_means_ours_only_and_is_not_retried(workloads_dir):
    script = workloads_dir("ours_only", f"""
        if args.impl == "reference":
            print("the reference has no such estimator", file=sys.stderr)
            sys.exit(3)
        {metrics_line(t=(1.5, "ms", "lower"))}
    """)
    runs = run_workload(workload(script), BOTH, repeats=3, quick=True, timeout=60)
    assert [r.impl for r in runs] == ["ours", "reference", "ours", "ours"]
    summary = summarise(workload(script), runs, reference_run=True)
    assert summary.status == "ours only"
    assert summary.note == "no reference counterpart: the reference has no such estimator"
    (metric,) = summary.metrics
    assert metric.ours == [1.5, 1.5, 1.5] and metric.reference == [] and metric.speedup is None


def test_exit_3_from_ours_is_a_failure(workloads_dir):
    script = workloads_dir("three", "sys.exit(3)")
    run = run_once(script, PYTHON, "ours", repeat=0, quick=False, timeout=60)
    assert not run.ok and run.error.startswith("exit code 3")


def test_a_crashing_implementation_is_reported_and_not_run_again(workloads_dir):
    script = workloads_dir("crash", f"""
        if args.impl == "ours":
            raise RuntimeError("boom in ours")
        {metrics_line(t=(2.0, "s", "lower"))}
    """)
    runs = run_workload(workload(script), BOTH, repeats=3, quick=False, timeout=60)
    assert [r.impl for r in runs].count("ours") == 1
    assert [r.impl for r in runs].count("reference") == 3
    summary = summarise(workload(script), runs, reference_run=True)
    assert summary.status == "failed"
    assert "ours: exit code 1: RuntimeError: boom in ours" in summary.note
    assert "Traceback" in runs[0].stderr_tail
    assert summary.metrics[0].reference == [2.0, 2.0, 2.0] and summary.metrics[0].speedup is None


def test_output_outside_the_protocol_is_a_failure_that_says_why(workloads_dir):
    script = workloads_dir("chatty", 'print("took 3 seconds")')
    summary = summarise(workload(script), run_workload(workload(script), {"ours": PYTHON}, repeats=2,
                                                       quick=False, timeout=60), reference_run=False)
    assert summary.status == "failed"
    assert "last line is not JSON ('took 3 seconds')" in summary.note


def test_a_run_past_the_timeout_is_stopped_and_reported(workloads_dir):
    script = workloads_dir("slow", "time.sleep(30)")
    run = run_once(script, PYTHON, "ours", repeat=0, quick=False, timeout=0.5)
    assert run.error == "timed out after 0.5 s (raise --timeout)"
    assert run.wall_s < 10


def test_planned_workloads_are_skipped_with_a_note():
    summary = summarise(Workload("code_tests", "code tests", None), [], reference_run=True)
    assert summary.status == "skipped"
    assert summary.note == "not written yet (bench/workloads/code_tests.py)"
    assert summary.metrics == []


def test_ours_only_when_the_reference_was_not_run(workloads_dir):
    script = workloads_dir("solo", metrics_line(t=(1.0, "s", "lower")))
    summary = summarise(workload(script), run_workload(workload(script), {"ours": PYTHON}, repeats=1,
                                                       quick=False, timeout=60), reference_run=False)
    assert (summary.status, summary.note) == ("ours only", "reference not run")

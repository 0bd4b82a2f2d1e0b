"""Finding workload scripts and choosing among them."""

import sys

import pytest

from bench import BenchError
from bench.discovery import PLANNED, WORKLOADS_DIR, discover, select
from tests.bench.conftest import metrics_line


def test_planned_workloads_come_first_then_other_scripts(workloads_dir):
    workloads_dir("math_grading", metrics_line(t=(1, "s", "lower")), description="grading answers")
    workloads_dir("zeta", metrics_line(t=(1, "s", "lower")))
    workloads_dir("alpha", metrics_line(t=(1, "s", "lower")))
    (workloads_dir.folder / "_shared.py").write_text("HELPER = 1\n")
    (workloads_dir.folder / "notes.txt").write_text("not a workload\n")

    workloads = discover(workloads_dir.folder)
    assert [w.name for w in workloads] == [*PLANNED, "alpha", "zeta"]
    by_name = {w.name: w for w in workloads}
    assert by_name["math_grading"].script == workloads_dir.folder / "math_grading.py"
    assert by_name["math_grading"].description == "grading answers"  # the docstring, without "Workload:"
    assert by_name["games"].script is None
    assert by_name["games"].description == PLANNED["games"]


def test_a_script_that_does_not_parse_still_runs_and_gets_no_description(workloads_dir):
    (workloads_dir.folder / "broken.py").write_text("def (:\n")
    (broken,) = [w for w in discover(workloads_dir.folder) if w.name == "broken"]
    assert broken.description == "" and broken.script is not None


def test_the_shipped_import_make_workload_is_found():
    (import_make,) = [w for w in discover() if w.name == "import_make"]
    assert import_make.script == WORKLOADS_DIR / "import_make.py"
    assert "make" in import_make.description


def test_select_keeps_suite_order_and_names_the_closest_workload():
    workloads = discover()
    assert [w.name for w in select(workloads, ["rebn", "import_make"])] == ["import_make", "rebn"]
    assert [w.name for w in select(workloads, None)] == [w.name for w in workloads]
    with pytest.raises(BenchError, match=r"No workload named 'import-make'\. Did you mean: import_make\?"):
        select(workloads, ["import-make"])


def test_no_workload_shadows_a_standard_library_module():
    # A script's folder comes first on the import path: bench/workloads/math.py would be imported
    # as `math` by everything the workload runs.
    shadowing = {w.name for w in discover() if w.script is not None} & set(sys.stdlib_module_names)
    assert not shadowing


def test_a_workload_made_for_a_gpu_runs_only_when_named():
    workloads = discover()
    everything = {w.name: w for w in select(workloads, None)}
    assert everything["gpu_rollout"].script is not None and not everything["gpu_rollout"].runs
    assert "--only gpu_rollout" in everything["gpu_rollout"].skipped
    assert all(w.runs for w in everything.values() if w.script is not None and w.name != "gpu_rollout")
    (named,) = select(workloads, ["gpu_rollout"])
    assert named.runs

"""``python -m bench`` end to end: the smoke run on import_make, a full run on scripted
workloads with a stand-in reference interpreter, and usage errors."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import bench.__main__ as cli
from bench.discovery import PLANNED, discover
from tests.bench.conftest import metrics_line
from tests.helpers import REPO

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run_bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=300)


def image_size(path: Path) -> tuple[int, int]:
    from matplotlib.image import imread

    height, width, _ = imread(path).shape
    return width, height


def test_quick_smoke_run_on_import_make_writes_json_csv_markdown_and_png(tmp_path):
    out = tmp_path / "results"
    done = run_bench("--quick", "--only", "import_make", "--no-reference", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "import_make_s" in done.stdout  # the terminal table

    document = json.loads((out / "results.json").read_text())
    assert document["schema"] == 1
    assert document["settings"]["quick"] is True and document["settings"]["repeats"] == 1
    assert document["settings"]["reference"] is None
    machine = document["machine"]
    assert machine["cores"] >= 1 and machine["cpu"] and machine["python"]["ours"].startswith("3.")
    assert machine["date"][:2] == "20"
    (workload,) = document["workloads"]
    assert (workload["name"], workload["status"]) == ("import_make", "ours only")
    (metric,) = workload["metrics"]
    assert metric["name"] == "import_make_s" and metric["better"] == "lower" and metric["unit"] == "s"
    assert len(metric["ours"]["samples"]) == 1 and metric["ours"]["median"] > 0
    assert metric["reference"]["samples"] == [] and metric["speedup"] is None
    (run,) = workload["runs"]
    assert run["command"][-3:] == ["--impl", "ours", "--quick"]

    rows = list(csv.DictReader((out / "results.csv").open()))
    assert [(r["workload"], r["metric"], r["status"]) for r in rows] == [("import_make", "import_make_s", "ours only")]
    assert "| import_make | import_make_s |" in (out / "table.md").read_text()
    png = out / "speedups.png"
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    width, height = image_size(png)
    assert width > 400 and height > 100


def test_full_run_alternates_with_the_reference_and_reports_every_outcome(workloads_dir, fake_reference,
                                                                         monkeypatch, tmp_path, capsys):
    workloads_dir("import_make", f"""
        {metrics_line(import_make_s=("0.1 if args.impl == 'ours' else 0.4", "s", "lower"))}
    """)
    workloads_dir("rebn", f"""
        if args.impl == "reference":
            print("the reference has no ReBN", file=sys.stderr)
            sys.exit(3)
        {metrics_line(episodes_per_s=(1000, "episodes/s", "higher"))}
    """)
    workloads_dir("extra", 'print("no metrics here")')
    monkeypatch.setattr(cli, "discover", lambda: discover(workloads_dir.folder))
    out = tmp_path / "out"

    code = cli.main(["--repeats", "2", "--reference-python", str(fake_reference), "--out", str(out)])

    assert code == 1  # one workload failed
    stdout = capsys.readouterr().out
    assert "4.00x" in stdout and "import_make_s" in stdout
    document = json.loads((out / "results.json").read_text())
    statuses = {w["name"]: w["status"] for w in document["workloads"]}
    assert statuses == {**{name: "skipped" for name in PLANNED}, "import_make": "ok", "rebn": "ours only",
                        "extra": "failed"}
    by_name = {w["name"]: w for w in document["workloads"]}
    (import_make,) = by_name["import_make"]["metrics"]
    assert import_make["ours"]["samples"] == [0.1, 0.1] and import_make["reference"]["samples"] == [0.4, 0.4]
    assert import_make["speedup"] == 4.0 and import_make["ratio"] == 0.25
    assert [r["impl"] for r in by_name["import_make"]["runs"]] == ["ours", "reference", "reference", "ours"]
    assert by_name["rebn"]["note"] == "no reference counterpart: the reference has no ReBN"
    assert "not JSON" in by_name["extra"]["note"]
    assert document["settings"]["reference"] == "gem-llm 0.1.0"
    assert document["machine"]["python"]["reference"] == document["machine"]["python"]["ours"]
    table = (out / "table.md").read_text()
    assert "| import_make | import_make_s | 0.1 s | 0.4 s | 4.00x |  |" in table
    assert "| games |  | - | - | - | skipped: not written yet (bench/workloads/games.py) |" in table
    assert (out / "speedups.png").read_bytes()[:8] == PNG_SIGNATURE


def test_an_unknown_workload_is_a_clear_error_not_a_traceback(tmp_path):
    done = run_bench("--only", "import-make", "--out", str(tmp_path))
    assert done.returncode == 2
    assert "No workload named 'import-make'. Did you mean: import_make?" in done.stderr
    assert "Traceback" not in done.stderr
    assert not any(tmp_path.iterdir())


def test_an_output_folder_that_is_a_file_is_refused_before_running(tmp_path):
    taken = tmp_path / "results"
    taken.write_text("a file")
    done = run_bench("--only", "import_make", "--no-reference", "--out", str(taken))
    assert done.returncode == 2
    assert f"Cannot write results to {taken}" in done.stderr and "--out" in done.stderr


def test_contradictory_or_invalid_options_are_usage_errors():
    done = run_bench("--no-reference", "--reference-python", sys.executable)
    assert done.returncode == 2 and "contradict" in done.stderr
    done = run_bench("--repeats", "0")
    assert done.returncode == 2 and "'0' must be above 0" in done.stderr

"""The test tools GEM supplies to test runs (the kit): whole pip installs, metadata included, that
run alone in a clean interpreter (``python -S``: the standard library and the kit, nothing else)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gem_core.errors import GemError
from gem_envs.terminal import pytest_kit
from gem_envs.terminal.pytest_kit import kit
from gem_envs.terminal.wheelhouse import installed_version
from tests.terminal.images import TEST_TOOLS

PYTHON = "%d.%d" % sys.version_info[:2]
KITS = {"installed-pytest": ("pytest",), "pinned-with-a-plugin": TEST_TOOLS}
SAMPLE = """\
def test_passes():
    assert 1 + 1 == 2

def test_fails():
    assert 1 + 1 == 3
"""


@pytest.fixture(scope="module", params=sorted(KITS))
def tools(request) -> tuple[tuple[str, ...], Path]:
    return KITS[request.param], kit(KITS[request.param], PYTHON)


def alone(folder: Path, argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``argv`` with only the kit on ``PYTHONPATH`` and first on ``PATH``, nothing else inherited."""
    env = {"PATH": f"{folder}/bin:/usr/bin:/bin", "PYTHONPATH": str(folder), "HOME": str(cwd), "LANG": "C.UTF-8"}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_every_package_in_the_kit_has_its_metadata(tools, tmp_path):
    requirements, folder = tools
    probe = textwrap.dedent("""
        import json, sys
        from importlib import metadata
        from pathlib import Path
        tops = {p.name.removesuffix(".py") for p in Path(sys.argv[1]).iterdir()
                if p.name not in ("bin", "__pycache__", "gem-pytest.ini") and not p.name.endswith(".dist-info")}
        owners = metadata.packages_distributions()
        print(json.dumps({"without_metadata": sorted(t for t in tops if t not in owners),
                          "versions": {d.metadata["Name"].lower(): d.version for d in metadata.distributions()}}))
    """)
    done = alone(folder, [sys.executable, "-S", "-c", probe, str(folder)], tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["without_metadata"] == []
    expected = {name: version for name, _, version in (r.partition("==") for r in pytest_kit.pinned(requirements))}
    assert {name: found["versions"].get(name) for name in expected} == expected
    assert {"pytest", "pluggy", "iniconfig", "packaging"} <= set(found["versions"])
    assert expected["pytest"] == (installed_version("pytest") if requirements == ("pytest",) else "8.4.1")


def test_pytest_runs_alone_with_its_summary_quietly_and_with_its_plugins(tools, tmp_path):
    requirements, folder = tools
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    plugin = [r for r in requirements if r.startswith("pytest-json-ctrf")]
    summary = alone(folder, [sys.executable, "-S", "-m", "pytest", "-p", "no:cacheprovider", "-rA", "test_sample.py",
                             *(["--ctrf", "ctrf.json"] if plugin else [])], tmp_path)
    out = summary.stdout
    assert summary.returncode == 1 and "INTERNALERROR" not in out + summary.stderr, out + summary.stderr
    assert "PASSED test_sample.py::test_passes" in out and "FAILED test_sample.py::test_fails" in out
    header = next(line for line in out.splitlines() if line.startswith("platform "))
    assert re.search(r"pytest-\d+\.\d+\.\d+, pluggy-\d+\.\d+", header), header  # versions read from their metadata
    if plugin:
        assert "plugins: json-ctrf-0.3.5" in out
        report = json.loads((tmp_path / "ctrf.json").read_text())["results"]["summary"]
        assert (report["passed"], report["failed"]) == (1, 1)
    quiet = alone(folder, ["pytest", "-p", "no:cacheprovider", "-q", "test_sample.py"], tmp_path)  # its console script
    assert quiet.returncode == 1 and "1 failed, 1 passed" in quiet.stdout, quiet.stdout + quiet.stderr


def test_a_kit_is_made_once_and_is_read_only_for_the_sandbox(tools):
    requirements, folder = tools
    assert kit(requirements, PYTHON) == folder
    assert folder.parent == pytest_kit.kits_root()
    assert all(path.stat().st_mode & 0o004 for path in [folder, *folder.rglob("*")])  # readable by anyone
    assert (folder / "bin" / "pytest").read_text().startswith("#!/bin/sh\n'''exec' python3 -s")  # GEM's launcher


def test_tools_that_are_nowhere_are_a_clear_error():
    with pytest.raises(GemError, match=r"(?s)Cannot supply pytest-gem-absent==0\.0\.1 .*for Python.*"
                                       r"No matching distribution"):
        kit(("pytest", "pytest-gem-absent==0.0.1"), PYTHON)


# --- the launcher: how the tests run is the kit's, whatever the working directory holds ------------

PLANTED = {  # what an agent may leave where the tests run, each of which would pass every test
    "pytest.py": "import sys\nsys.exit(0)\n",
    "conftest.py": "import os\nos._exit(0)\n",
    "pytest.ini": "[pytest]\naddopts = --co\n",
    "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '--co'\n",
    "json.py": "raise SystemExit(0)\n",
}


def launch(folder: Path, cwd: Path, tests: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": f"{folder}/bin:/usr/bin:/bin", "PYTHONPATH": str(folder), "HOME": str(cwd), "LANG": "C.UTF-8",
           "TEST_DIR": str(tests)}
    return subprocess.run(["pytest", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_the_launcher_ignores_what_the_working_directory_holds_but_imports_from_it(tools, tmp_path):
    _, folder = tools
    work, tests = tmp_path / "work", tmp_path / "tests"
    work.mkdir(), tests.mkdir()
    for name, text in PLANTED.items():
        (work / name).write_text(text)
    (work / "solution.py").write_text("def answer():\n    return 41\n")
    (tests / "test_outputs.py").write_text("import json\nfrom solution import answer\n\n\n"
                                           "def test_answer():\n    assert json.loads(str(answer())) == 42\n")
    done = launch(folder, work, tests, str(tests / "test_outputs.py"), "-rA")
    assert done.returncode == 1 and f"rootdir: {tmp_path}\n" in done.stdout, done.stdout + done.stderr
    assert "FAILED ../tests/test_outputs.py::test_answer - AssertionError: assert 41 == 42" in done.stdout, done.stdout


def test_the_launcher_keeps_the_configuration_and_conftest_the_task_ships(tools, tmp_path):
    _, folder = tools
    work, tests = tmp_path / "work", tmp_path / "tests"
    work.mkdir(), tests.mkdir()
    (work / "pytest.ini").write_text("[pytest]\naddopts = --co\n")
    (tests / "pytest.ini").write_text("[pytest]\nmarkers =\n    shipped: a marker the task declares\n"
                                      "addopts = --strict-markers\n")
    (tests / "conftest.py").write_text("import pytest\n\n\n@pytest.fixture\ndef answer():\n    return 42\n")
    (tests / "test_outputs.py").write_text("import pytest\n\n\n@pytest.mark.shipped\n"
                                           "def test_answer(answer):\n    assert answer == 42\n")
    done = launch(folder, work, tests, str(tests / "test_outputs.py"), "-rA")
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
    assert f"configfile: pytest.ini" in done.stdout and f"rootdir: {tests}" in done.stdout
    own = launch(folder, work, tests, "-c", str(work / "pytest.ini"), str(tests / "test_outputs.py"))
    assert own.returncode == 0 and "collected 1 item" in own.stdout and "passed" not in own.stdout  # its --co


def test_the_launcher_finds_the_root_folder_pytest_would(tmp_path):
    from gem_envs.terminal import pytest_launcher

    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_a.py").write_text("")
    (tmp_path / "work").mkdir()
    import os

    previous = os.getcwd()
    try:
        os.chdir(tmp_path / "work")
        assert pytest_launcher.rootdir([str(tmp_path / "tests" / "unit" / "test_a.py") + "::test_x", "-q"]) \
            == str(tmp_path)  # the working directory and the tests share tmp_path
        assert pytest_launcher.rootdir(["--ctrf", "/nowhere/ctrf.json"]) == str(tmp_path / "work")
        os.chdir("/")
        assert pytest_launcher.rootdir([str(tmp_path / "tests" / "unit")]) == str(tmp_path / "tests" / "unit")
    finally:
        os.chdir(previous)

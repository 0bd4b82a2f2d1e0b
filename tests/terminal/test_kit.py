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
                if p.name not in ("bin", "__pycache__") and not p.name.endswith(".dist-info")}
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
    assert (folder / "bin" / "pytest").read_text().startswith("#!/usr/bin/env python3\n")


def test_tools_that_are_nowhere_are_a_clear_error():
    with pytest.raises(GemError, match=r"(?s)Cannot supply pytest-gem-absent==0\.0\.1 .*for Python.*"
                                       r"No matching distribution"):
        kit(("pytest", "pytest-gem-absent==0.0.1"), PYTHON)

"""Test-run policy shared by every test folder.

With ``GEM_TESTS_STRICT=1`` (set by CI) a skipped test fails instead: a test skipped for a
missing optional dependency or bubblewrap would otherwise pass without checking anything.
"""

import os

import pytest

STRICT = os.environ.get("GEM_TESTS_STRICT") == "1"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if STRICT and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under GEM_TESTS_STRICT=1 (CI installs everything): {reason}"


@pytest.fixture(scope="session")
def python_under_tmp():
    """A virtual environment's interpreter whose prefix lies under /tmp, where the sandbox's own
    private /tmp is mounted."""
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp(prefix="gem-venv-", dir="/tmp"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True)
    yield str(folder / "venv" / "bin" / "python")
    shutil.rmtree(folder, ignore_errors=True)

"""Fixtures for the benchmark runner: workload scripts written on the fly, and an interpreter that
passes for the reference."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

# A workload following the protocol; BEHAVIOUR decides what each implementation does.
WORKLOAD_TEMPLATE = '''\
"""Workload: {description}."""
import argparse, json, sys, time
parser = argparse.ArgumentParser()
parser.add_argument("--impl", required=True)
parser.add_argument("--quick", action="store_true")
args = parser.parse_args()
{behaviour}
'''


@pytest.fixture
def workloads_dir(tmp_path: Path):
    """A folder and a function that writes a workload script into it."""
    folder = tmp_path / "workloads"
    folder.mkdir()

    def write(name: str, behaviour: str, description: str = "a test workload") -> Path:
        script = folder / f"{name}.py"
        script.write_text(WORKLOAD_TEMPLATE.format(description=description, behaviour=textwrap.dedent(behaviour)))
        return script

    write.folder = folder
    return write


@pytest.fixture
def fake_reference(tmp_path: Path, monkeypatch) -> Path:
    """This interpreter, made to report ``gem-llm`` 0.1.0 as installed (a dist-info on PYTHONPATH),
    so the runner accepts it as the reference without a network install."""
    site = tmp_path / "site"
    info = site / "gem_llm-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gem-llm\nVersion: 0.1.0\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    return Path(sys.executable)


def metrics_line(**metrics: tuple[object, str, str]) -> str:
    """Python code printing a protocol line; each metric is (value or Python expression, unit, better)."""
    entries = ", ".join(
        f"{name!r}: {{'value': {value}, 'unit': {unit!r}, 'better': {better!r}}}"
        for name, (value, unit, better) in metrics.items()
    )
    return f"print(json.dumps({{'metrics': {{{entries}}}}}))"

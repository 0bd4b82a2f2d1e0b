"""The cached reference environment: where it lives, reuse, and clear errors."""

import sys
from pathlib import Path

import pytest
from rich.console import Console

from bench import BenchError, reference


def test_the_environment_is_keyed_by_what_it_installs_under_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GEM_CACHE_DIR", str(tmp_path))
    venv = reference.venv_dir()
    assert venv.parent == tmp_path / "bench"
    assert venv.name.startswith("gem-llm-0.1.0-")
    assert reference.venv_dir("0.2.0").name.startswith("gem-llm-0.2.0-")
    monkeypatch.setattr(reference, "UNDECLARED", ("pandas",))
    assert reference.venv_dir() != venv  # other requirements, another environment
    assert reference.requirements() == ["gem-llm==0.1.0", "pandas"]


def test_a_present_environment_is_reused_without_installing(tmp_path, monkeypatch, fake_reference):
    monkeypatch.setenv("GEM_CACHE_DIR", str(tmp_path))
    python = reference.venv_python(reference.venv_dir())
    python.parent.mkdir(parents=True)
    python.symlink_to(fake_reference)
    (python.parents[1] / ".complete").touch()
    console = Console(record=True, width=200)
    assert reference.ensure_reference(console) == python
    assert console.export_text() == ""  # nothing created, nothing said
    assert [p.name for p in python.parents[2].iterdir()] == [python.parents[1].name]  # no install log


def test_an_interpreter_without_the_reference_is_refused_with_the_fix():
    with pytest.raises(BenchError) as error:
        reference.check_interpreter(Path(sys.executable))
    assert "cannot import gem-llm" in str(error.value)
    assert "-m pip install gem-llm==0.1.0" in str(error.value)


def test_a_missing_interpreter_is_refused(tmp_path):
    with pytest.raises(BenchError, match="does not exist"):
        reference.check_interpreter(tmp_path / "python")


def test_an_interpreter_with_the_reference_is_accepted(fake_reference):
    assert reference.check_interpreter(fake_reference) == fake_reference
    assert reference.installed_version(fake_reference) == "0.1.0"

"""The locks (scripts/locks.py): written from pip freeze of a real environment, and an install that
differs from its lock is a failure that names each difference."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.helpers import REPO


def locks_module():
    spec = importlib.util.spec_from_file_location("locks", REPO / "scripts" / "locks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory):
    """A new virtual environment with pip (from the interpreter's own bundle: offline)."""
    folder = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    return str(folder / "bin" / "python")


@pytest.fixture()
def locks(tmp_path, monkeypatch):
    module = locks_module()
    monkeypatch.setattr(module, "LOCKS", tmp_path / "locks")
    monkeypatch.setattr(module, "REPO", tmp_path)
    return module


def test_a_lock_is_the_freeze_of_an_environment_and_that_environment_matches_it(locks, venv_python, capsys):
    path = locks.write_lock("core", venv_python, "the tests passed with")
    text = path.read_text()
    pins, python = locks.read_lock("core")
    assert "pip" in pins and python == locks.python_tag(venv_python)
    assert text.startswith("# The versions the tests passed with.")
    assert locks.verify("core", venv_python) == 0
    assert "every package as locks/core.txt pins it" in capsys.readouterr().err


def test_an_environment_that_differs_from_its_lock_fails_naming_each_difference(locks, venv_python, capsys):
    path = locks.write_lock("core", venv_python, "the tests passed with")
    pins, _ = locks.read_lock("core")
    lines = [line for line in path.read_text().splitlines() if not line.lower().startswith("pip==")]
    path.write_text("\n".join([*lines, "pip==0.1", "left-pad==1.0"]) + "\n")
    assert locks.verify("core", venv_python) == 1
    err = capsys.readouterr().err
    assert f"pip is {pins['pip']}, the lock pins 0.1" in err
    assert "left-pad 1.0 is pinned but not installed" in err
    assert "python scripts/locks.py refresh core" in err and "GEM_LOCK=none" in err

    path.write_text("\n".join(line for line in lines if not line.startswith("setuptools")) + "\n")
    assert locks.verify("core", venv_python) == 1
    assert "setuptools " in capsys.readouterr().err


def test_on_another_python_the_differences_are_a_warning(locks, venv_python, capsys):
    path = locks.write_lock("core", venv_python, "the tests passed with")
    path.write_text(path.read_text().replace(f"# python: {locks.python_tag(venv_python)}", "# python: 2.7")
                    + "left-pad==1.0\n")
    assert locks.verify("core", venv_python) == 0
    err = capsys.readouterr().err
    assert "WARNING: locks/core.txt was made with Python 2.7" in err and "left-pad" in err


def test_local_labels_are_dropped_and_names_compared_as_pip_does(locks, monkeypatch):
    monkeypatch.setattr(locks, "frozen", lambda python: {"torch": ("torch", "2.13.0+cpu"),
                                                         "pyyaml": ("PyYAML", "6.0.2")})
    monkeypatch.setattr(locks, "python_tag", lambda python=None: "3.11")
    text = locks.write_lock("core", "python", "the tests passed with").read_text()
    assert "PyYAML==6.0.2\ntorch==2.13.0\n" in text and "+cpu" not in text
    assert locks.read_lock("core")[0] == {"pyyaml": "6.0.2", "torch": "2.13.0"}
    assert locks.differences("core", "python")[0] == []


def test_a_missing_lock_says_how_to_make_it(locks):
    with pytest.raises(SystemExit, match=r"locks/trl.txt is missing: make it with `python scripts/locks.py refresh trl`"):
        locks.read_lock("trl")


#: Locks where triton comes without CUDA: vLLM's CPU build needs xgrammar, which requires triton on
#: Linux x86_64 whatever the torch build (triton's wheel pulls no CUDA package).
TRITON_ON_CPU = {"verl_cpu"}


def test_every_lock_of_the_repository_pins_exact_public_versions_and_no_cuda_package():
    module = locks_module()
    for name in module.lock_names():
        pins, python = module.read_lock(name)
        assert python, f"locks/{name}.txt does not say which Python made it"
        assert pins and all(version and "+" not in version for version in pins.values()), name
        cuda = [key for key in pins if key == "triton" and name not in TRITON_ON_CPU
                or key.startswith("nvidia-") and key != "nvidia-ml-py"]
        assert "gem-adapters" not in pins and not cuda, (name, cuda)  # nvidia-ml-py: NVML's Python bindings


def test_the_newest_versions_are_told_against_the_lock(locks, monkeypatch):
    monkeypatch.setattr(locks, "python_tag", lambda python=None: "3.11")
    monkeypatch.setattr(locks, "frozen", lambda python: {"numpy": ("numpy", "2.4.6"), "rich": ("rich", "14.0.0")})
    locks.write_lock("core", "python", "the tests passed with")
    monkeypatch.setattr(locks, "frozen", lambda python: {"numpy": ("numpy", "2.5.0"), "click": ("click", "8.3.0")})
    assert locks.changes("core", "python") == ["click 8.3.0 (new)", "numpy 2.4.6 -> 2.5.0", "rich 14.0.0 (gone)"]
    assert locks.changes("trl", "python") == ["no locks/trl.txt yet"]


def test_a_package_a_later_install_line_sets_is_checked_but_constrains_no_line(locks, monkeypatch):
    monkeypatch.setattr(locks, "python_tag", lambda python=None: "3.11")
    monkeypatch.setitem(locks.SET_BY_A_LATER_LINE, "roll", ("OmegaConf",))
    monkeypatch.setattr(locks, "frozen", lambda python: {"omegaconf": ("omegaconf", "2.3.1"), "rich": ("rich", "14.0.0")})
    text = locks.write_lock("roll", "python", "the tests passed with").read_text()
    assert f"\n{locks.LATER_LINE}omegaconf==2.3.1\nrich==14.0.0\n" in text
    constraints = [line for line in text.splitlines() if not line.startswith("#")]  # what pip reads
    assert constraints == ["rich==14.0.0"]
    assert locks.read_lock("roll")[0] == {"omegaconf": "2.3.1", "rich": "14.0.0"}
    assert locks.differences("roll", "python")[0] == []
    monkeypatch.setattr(locks, "frozen", lambda python: {"omegaconf": ("omegaconf", "2.4.0"), "rich": ("rich", "14.0.0")})
    assert locks.differences("roll", "python")[0] == ["omegaconf is 2.4.0, the lock pins 2.3.1"]


def test_the_packages_set_by_a_later_line_belong_to_stages_and_are_in_their_locks():
    module = locks_module()
    for name, packages in module.SET_BY_A_LATER_LINE.items():
        assert name in module.stage_names()
        text = module.lock_path(name).read_text()
        for package in packages:
            assert any(line.startswith(module.LATER_LINE) and module.canonical(line[len(module.LATER_LINE):].split("==")[0])
                       == module.canonical(package) for line in text.splitlines()), (name, package)

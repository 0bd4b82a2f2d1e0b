"""Each adapter's install lines are kept once, in adapters/<lib>/install.sh: its docs page shows
them and the adapter's test stage is built from them."""

from __future__ import annotations

import importlib.util
import re
import sys

import pytest

from tests.helpers import REPO


def adapter_envs():
    spec = importlib.util.spec_from_file_location("adapter_envs", REPO / "scripts" / "adapter_envs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_every_adapter_stage_is_built_from_the_install_lines_its_page_shows():
    envs = adapter_envs()
    adapter_stages = {name: stage for name, stage in envs.STAGES.items() if stage.tests.startswith("tests/adapters/")}
    assert len(adapter_stages) >= 8  # the other wings' stages (protocols, harnesses) install no library's adapter
    for name, stage in adapter_stages.items():
        adapter, script_name = envs.VARIANTS.get(name, (name, "install.sh"))
        script = (REPO / "adapters" / adapter / script_name).read_text()
        page = (REPO / "docs" / "adapters" / f"{adapter}.md").read_text()
        shown = set(re.findall(rf'--8<-- "adapters/{adapter}/{re.escape(script_name)}:(\w+)"', page))
        assert shown and ({"torch", "install"} <= shown or name in envs.VARIANTS), name
        assert all(f"--8<-- [start:{section}]" in script for section in shown), name
        assert stage.extras == (adapter, "dev"), name
        assert stage.tests == f"tests/adapters/{name}" or (name in envs.VARIANTS and stage.tests.startswith(
            f"tests/adapters/{adapter}/")), name
        assert stage.before == ("torch==2.13.0",), name
        assert stage.lock == f"locks/{name}.txt" and (REPO / stage.lock).is_file(), name
        pip_lines = [line for line in script.splitlines() if line.startswith("pip install ")]
        assert len(pip_lines) == 2 + len(stage.after), name


def test_the_lines_after_the_project_become_the_stage_steps_in_order(tmp_path, monkeypatch):
    envs = adapter_envs()
    (tmp_path / "adapters" / "lib").mkdir(parents=True)
    script = tmp_path / "adapters" / "lib" / "install.sh"
    script.write_text('set -e\npip install -c locks/lib.txt torch==2.13.0   # CPU\n# a note\n'
                      'pip install -c locks/lib.txt -e ".[lib]"\n'
                      'pip install -c locks/lib.txt --no-deps "pkg[x]==1.0"  # why\npip install -c locks/lib.txt a b\n')
    monkeypatch.setattr(envs, "REPO", tmp_path)
    stage = envs.documented_stage("lib")
    assert stage == envs.Stage(extras=("lib", "dev"), tests="tests/adapters/lib", before=("torch==2.13.0",),
                               after=(("--no-deps", "pkg[x]==1.0"), ("a", "b")), lock="locks/lib.txt")
    script.write_text("pip install -c locks/lib.txt torch\n")
    with pytest.raises(SystemExit, match=r'needs one `pip install -c locks/lib.txt -e ".\[lib\]"` line'):
        envs.documented_stage("lib")
    script.write_text('pip install -c locks/lib.txt -e ".[lib]"\npip install a\n')
    with pytest.raises(SystemExit, match=r"every pip line .* takes the stage's lock: `pip install -c locks/lib.txt"):
        envs.documented_stage("lib")


def test_a_stage_key_changes_with_its_lock_and_a_missing_lock_is_named(tmp_path, monkeypatch):
    envs = adapter_envs()
    (tmp_path / "locks").mkdir()
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    monkeypatch.setattr(envs, "REPO", tmp_path)
    monkeypatch.delenv("GEM_LOCK", raising=False)
    stage = envs.Stage(extras=("trl", "dev"), tests="tests/adapters/trl", lock="locks/trl.txt")
    with pytest.raises(SystemExit, match=r"locks/trl.txt is missing: make it with `python scripts/locks.py "
                                         r"refresh trl`"):
        envs.environment_key("trl", stage)
    (tmp_path / "locks" / "trl.txt").write_text("trl==1.16.0\n")
    first = envs.environment_key("trl", stage)
    (tmp_path / "locks" / "trl.txt").write_text("trl==1.17.0\n")
    relocked = envs.environment_key("trl", stage)
    assert relocked != first
    monkeypatch.setenv("GEM_LOCK", "none")
    assert envs.environment_key("trl", stage) not in (first, relocked)  # the newest versions: a stage of its own

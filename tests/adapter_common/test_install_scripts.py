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
    for name, stage in envs.STAGES.items():
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
        pip_lines = [line for line in script.splitlines() if line.startswith("pip install ")]
        assert len(pip_lines) == 2 + len(stage.after), name


def test_the_lines_after_the_project_become_the_stage_steps_in_order(tmp_path, monkeypatch):
    envs = adapter_envs()
    (tmp_path / "adapters" / "lib").mkdir(parents=True)
    script = tmp_path / "adapters" / "lib" / "install.sh"
    script.write_text('set -e\npip install torch==2.13.0   # CPU\n# a note\npip install -e ".[lib]"\n'
                      'pip install --no-deps "pkg[x]==1.0"  # why\npip install a b\n')
    monkeypatch.setattr(envs, "REPO", tmp_path)
    stage = envs.documented_stage("lib")
    assert stage == envs.Stage(extras=("lib", "dev"), tests="tests/adapters/lib", before=("torch==2.13.0",),
                               after=(("--no-deps", "pkg[x]==1.0"), ("a", "b")))
    script.write_text("pip install torch\n")
    with pytest.raises(SystemExit, match=r'needs one `pip install -e ".\[lib\]"` line'):
        envs.documented_stage("lib")

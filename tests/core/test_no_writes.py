"""Resetting an environment writes nothing outside temporary folders and nothing into the
caller's working directory: every offline environment, reset for several episodes (reasoning-gym's
codeio, whose problems each run a program, for every problem) in an empty, read-only working
directory."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EPISODES = 6
SWEEP = Path(__file__).with_name("reset_sweep.py")


def read_only_command(folder: Path, command: list[str]) -> list[str]:
    """``command`` run with ``folder`` made read-only: a read-only bind mount in a mount namespace
    of its own for root (whom permissions do not stop), the permission bits for anyone else."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return command
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is needed to make a read-only folder as root")
    probe = subprocess.run([unshare, "--mount", "--propagation", "private", "mount", "--bind", "-o", "ro",
                            str(folder), str(folder)], capture_output=True, text=True)
    if probe.returncode:
        pytest.skip(f"cannot make a read-only bind mount here: {probe.stderr.strip()}")
    mount = 'mount --bind -o ro "$0" "$0" && cd "$0" && exec "$@"'
    return [unshare, "--mount", "--propagation", "private", "sh", "-c", mount, str(folder), *command]


def webshop_index(path: str) -> bool:
    """Whether ``path`` lies in the search index WebShop builds beside its shipped sample data
    (``<products>.gem/``, documented in gem_envs.webshop.store)."""
    import gem_envs.webshop

    sample = Path(gem_envs.webshop.__file__).parent / "sample"
    try:
        folder = Path(path).relative_to(sample).parts[0]
    except (ValueError, IndexError):
        return False
    return folder.endswith(".json.gem")


def test_resetting_every_offline_environment_writes_only_temporary_folders(tmp_path):
    work, home, temporary = tmp_path / "work", tmp_path / "home", tmp_path / "tmp"
    for folder in (work, home, temporary):
        folder.mkdir()
    report_path = temporary / "report.json"
    environment = {**os.environ, "HOME": str(home), "TMPDIR": str(temporary), "PYTHONDONTWRITEBYTECODE": "1"}
    for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "MPLCONFIGDIR"):
        environment.pop(name, None)
    command = read_only_command(work, [sys.executable, str(SWEEP), str(EPISODES), str(report_path)])
    done = subprocess.run(command, cwd=work, env=environment, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(report_path.read_text())

    assert not report["errors"], "\n".join(f"{env_id}:\n{error}" for env_id, error in report["errors"].items())
    assert set(report["resets"]) == set(report["ids"]) and "rg:codeio" in report["ids"]
    assert all(count >= EPISODES for count in report["resets"].values())
    allowed = (f"{home}{os.sep}", f"{temporary}{os.sep}", "/dev/", "/proc/")  # /proc: the sandbox's user namespaces
    outside = [w for w in report["writes"] if not w["path"].startswith(allowed) and not webshop_index(w["path"])]
    assert not outside, "written outside temporary folders:\n" + "\n".join(
        f"{w['env']}: {w['event']} {w['path']}" for w in outside)
    assert list(work.iterdir()) == []

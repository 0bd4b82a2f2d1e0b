"""The virtual environment of OpenEnv's own package, beside the project's.

OpenEnv 0.10 (``openenv``) requires ``fastmcp<4``, hence ``mcp<2``, while the project's ``tools``
extra requires ``mcp>=2.3``: the two cannot share one environment. The tests of ``gem serve``
(tests/serve) drive OpenEnv's clients, its ``openenv validate`` command and its server in this
environment, and the bench's serve workload runs OpenEnv's server from it. It holds
``openenv==VERSION`` and this project with its ``openenv`` extra, installed together in one
resolve, as a user who serves GEM environments to OpenEnv would install them.

    python scripts/openenv_env.py          # make or reuse it (and refresh the project in it); print its python
    python scripts/openenv_env.py --find   # print its python if it is made (exit 1 if not); no network

It is cached like the adapter stages' environments (scripts/adapter_envs.py), under
``$GEM_TEST_ENVS`` (by default ``~/.cache/gem-adapters/test-envs``), keyed by what goes into it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from adapter_envs import cache_root, extra_requirements, pip, prune, say

NAME = "openenv"
OPENENV = "openenv==0.10.0"
FORMAT = 1  # bump to rebuild


def environment_path() -> Path:
    recipe = {"format": FORMAT, "python": list(sys.version_info[:2]), "openenv": OPENENV,
              "requirements": extra_requirements(("openenv",))}
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()
    return cache_root() / f"{NAME}-{digest[:16]}"


def build(path: Path) -> None:
    say(f"building {path} ({OPENENV} beside this project; once, a few minutes)")
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    python = path / "bin" / "python"
    pip(python, "--upgrade", "pip", "setuptools>=77", "wheel")
    pip(python, OPENENV, "-e", ".[openenv]")
    (path / "complete").write_text(f"built in {time.monotonic() - start:.0f} s\n")


def ensure() -> Path:
    """Make or reuse the environment; refresh the project in it (the clone may have moved)."""
    path = environment_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f"{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; the others wait and reuse
        if not (path / "complete").exists():
            shutil.rmtree(path, ignore_errors=True)  # a build that was cut off
            try:
                build(path)
            except BaseException:
                shutil.rmtree(path, ignore_errors=True)
                raise
            prune(cache_root(), NAME, keep=path)
        python = path / "bin" / "python"
        pip(python, "--no-deps", "-e", ".", quiet=True)
        (path / "complete").touch()  # marks it as used now
    return python


def main(argv: list[str]) -> int:
    if argv == ["--find"]:
        path = environment_path()
        if not (path / "complete").exists():
            say(f"{path} is not made yet: run `python scripts/openenv_env.py` (scripts/install_test_deps.sh does)")
            return 1
        print(path / "bin" / "python")
        return 0
    if argv:
        say("usage: openenv_env.py [--find]")
        return 2
    print(ensure())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""What the image test of an exported package needs beforehand, since the tests reach no network:
a local base image with Python's ``venv`` (the tests' Debian base, tests/terminal/images.py, with
Debian's ``python3-venv``), and a folder of wheels of what the package's ``requirements.txt``
pulls in (the project's dependencies and its ``openenv`` extra), for an offline ``pip install``.
``python -m tests.serve.images`` makes what is missing (scripts/install_test_deps.sh runs it).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.helpers import REPO
from tests.terminal.images import BASE as DEBIAN_BASE
from tests.terminal.images import ENGINE, exists

BASE_RECIPE = (f"FROM {DEBIAN_BASE}\n"
               "RUN apt-get update && apt-get install -y --no-install-recommends python3-venv "
               "&& rm -rf /var/lib/apt/lists/*\n")
BASE = "localhost/gem-test/bookworm-python-venv:" + hashlib.sha256(BASE_RECIPE.encode()).hexdigest()[:12]
PYTHON = "3.11"  # Debian bookworm's


def requirements() -> list[str]:
    """The project's dependencies and those of its ``openenv`` extra (what an exported package's
    image installs beside the project)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["openenv"]]


def wheels_dir() -> Path:
    key = hashlib.sha256(json.dumps([PYTHON, requirements()]).encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "gem-adapters" / f"openenv-image-wheels-{key}"


def ready() -> bool:
    return exists(BASE) and (wheels_dir() / "complete").exists()


def build_base() -> None:
    if exists(BASE):
        return
    with tempfile.TemporaryDirectory(prefix="gem-test-venv-base-") as context:
        (Path(context) / "Dockerfile").write_text(BASE_RECIPE)
        subprocess.run([ENGINE, "build", "--quiet", "-t", BASE, context], check=True, timeout=900,
                       stdout=subprocess.DEVNULL)


def download_wheels() -> None:
    folder = wheels_dir()
    if (folder / "complete").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "-d", str(folder), "--only-binary=:all:",
                    "--python-version", PYTHON, *requirements()], check=True, timeout=900)
    (folder / "complete").touch()


def main() -> None:
    build_base()
    download_wheels()
    print(f"exported-package image test ready: {BASE} and {wheels_dir()}", file=sys.stderr)


if __name__ == "__main__":
    main()

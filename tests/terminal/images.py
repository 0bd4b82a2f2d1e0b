"""The local images the container tests run on, since no container registry is reachable, and
the test tools their tasks pin, since the tests reach no package index.

The base is Debian bookworm (``mmdebstrap --variant=minbase``, with ``python3`` for the shell's
supervisor and ``sqlite3``, which the shipped tasks use) imported into podman and tagged by a hash of its recipe; the tasks' ``FROM`` names are
mapped to it (:data:`BASE_PATTERNS`). Tasks whose Dockerfile installs Debian packages are built
here too, so the tests themselves reach no network. The tools that Terminal-Bench 2's standard
test script pins (:data:`TEST_TOOLS`) are put in GEM's wheelhouse. ``python -m tests.terminal.images``
makes what is missing (``scripts/install_test_deps.sh`` runs it); podman's store and GEM's cache
keep them between runs.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

ENGINE = "podman"
RECIPE = ["mmdebstrap", "--variant=minbase", "--include=python3,sqlite3", "--quiet", "bookworm", "{tar}",
          "http://deb.debian.org/debian"]
BASE = "localhost/gem-test/bookworm-python:" + hashlib.sha256(" ".join(RECIPE).encode()).hexdigest()[:12]
# What the tasks' FROM lines name, all mapped to the one local base.
BASE_PATTERNS = ("ghcr.io/laude-institute/t-bench/*", "debian:*", "ubuntu:*", "python:*", "buildpack-deps:*")
TASKS_DIR = Path(__file__).parent / "container_tasks"
PREBUILT = ("jq-report",)
TEST_TOOLS = ("pytest==8.4.1", "pytest-json-ctrf==0.3.5")  # what Terminal-Bench 2's test.sh and evoeval's run-tests.sh pin  # tasks whose Dockerfile downloads Debian packages: built here, not in a test


def base_images() -> dict[str, str]:
    return {pattern: BASE for pattern in BASE_PATTERNS}


def exists(image: str) -> bool:
    return subprocess.run([ENGINE, "image", "exists", image], capture_output=True).returncode == 0


def build_base() -> None:
    if exists(BASE):
        return
    with tempfile.TemporaryDirectory(prefix="gem-test-base-") as scratch:
        tar = str(Path(scratch) / "root.tar")
        subprocess.run([arg.format(tar=tar) for arg in RECIPE], check=True, timeout=900)
        subprocess.run([ENGINE, "import", "--quiet", tar, BASE], check=True, timeout=300, stdout=subprocess.DEVNULL)


def build_tasks() -> None:
    from gem_envs.terminal.container import image_for
    from gem_envs.terminal.tasks import load_task

    for name in PREBUILT:
        image_for(ENGINE, load_task(TASKS_DIR / name, backend="auto"), base_images())


def provide_test_tools() -> None:
    """Put :data:`TEST_TOOLS` in GEM's wheelhouse (from the package index, the one time they are missing)."""
    from gem_envs.terminal import wheelhouse

    wheelhouse.provide(list(TEST_TOOLS))


def main() -> None:
    build_base()
    build_tasks()
    provide_test_tools()
    print(f"test images ready: {BASE} and {', '.join(PREBUILT)}; test tools: {', '.join(TEST_TOOLS)}", file=sys.stderr)


if __name__ == "__main__":
    main()

"""Public terminal-bench tasks for the container tests, kept byte for byte in archives.

``public_tasks.tar.gz`` holds ``evoeval-0``, ``evoeval-1`` and ``evoeval-2``, copied unchanged from
the public repository ``rese1f/terminal-bench-datasets`` (commit 17d2b935, ``datasets/evoeval/0-2``),
in terminal-bench's layout. ``harbor_tasks.tar.gz`` holds ``evoeval-3``, ``evoeval-6`` and
``evoeval-7`` from the same repository, rewritten into Harbor's layout with Terminal-Bench 2's
standard ``tests/test.sh`` by ``scripts/harbor_tasks.py convert``. Each archive keeps that
repository's Apache License 2.0 (``LICENSE``) and a ``NOTICE.md``. They are third-party data, not
this project's code, so they stay packed; the tests unpack them once per archive content.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).parent


def unpacked(archive: Path) -> Path:
    """The folder ``archive`` unpacks to (shared by concurrent test processes)."""
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"gem-public-tasks-{digest}"
    if not target.is_dir():
        staging = Path(tempfile.mkdtemp(prefix=f"{target.name}-", dir=target.parent))
        with tarfile.open(archive) as opened:
            opened.extractall(staging, filter="data")
        try:
            staging.rename(target)
        except OSError:  # another process unpacked it first
            shutil.rmtree(staging)
    return target


PUBLIC = unpacked(HERE / "public_tasks.tar.gz")  # terminal-bench's layout
HARBOR_PUBLIC = unpacked(HERE / "harbor_tasks.tar.gz")  # Harbor's layout, Terminal-Bench 2's test.sh
HARBOR_TASKS = sorted(p for p in HARBOR_PUBLIC.iterdir() if (p / "task.toml").is_file())

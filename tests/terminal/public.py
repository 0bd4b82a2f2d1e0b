"""Public terminal-bench tasks for the container tests, kept byte for byte in one archive.

``public_tasks.tar.gz`` holds ``evoeval-0``, ``evoeval-1`` and ``evoeval-2``, copied unchanged from
the public repository ``rese1f/terminal-bench-datasets`` (commit 17d2b935, ``datasets/evoeval/0-2``),
with that repository's Apache License 2.0 (``LICENSE``) and a ``NOTICE.md``. They are third-party
data, not this project's code, so they stay packed; the tests unpack them once per archive content.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import tempfile
from pathlib import Path

ARCHIVE = Path(__file__).parent / "public_tasks.tar.gz"


def unpacked() -> Path:
    """The folder the archive unpacks to (shared by concurrent test processes)."""
    digest = hashlib.sha256(ARCHIVE.read_bytes()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"gem-public-tasks-{digest}"
    if not target.is_dir():
        staging = Path(tempfile.mkdtemp(prefix=f"{target.name}-", dir=target.parent))
        with tarfile.open(ARCHIVE) as archive:
            archive.extractall(staging, filter="data")
        try:
            staging.rename(target)
        except OSError:  # another process unpacked it first
            shutil.rmtree(staging)
    return target


PUBLIC = unpacked()

"""CPU runtime settings, applied before torch is imported."""

from __future__ import annotations

import os
import sys


def prefer_passive_openmp() -> None:
    """Let torch's OpenMP threads sleep rather than busy-wait between operations.

    Busy-waiting threads made small-model training and sampling 10-40x slower on a 2-core
    machine shared with other work; sleeping costs little when the machine is idle. This only
    works before torch is imported, and keeps a value the user set.
    """
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

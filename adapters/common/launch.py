"""Launch commands as the one shell line a config command prints."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path


def python_command(*args: str) -> list[str]:
    """``python ARGS...``, named as this interpreter is (``python3``, ``python3.11``, ...)."""
    return [Path(sys.executable).name, *args]


def command_line(argv: Sequence[str]) -> str:
    """``argv`` as one line a POSIX shell reads back as the same arguments."""
    return shlex.join([str(arg) for arg in argv])

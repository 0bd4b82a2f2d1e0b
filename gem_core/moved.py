"""Old import paths kept working for one release after a module moves.

An old module file calls :func:`alias_module`; the old name then *is* the new module object, so
classes keep their identity and patching either name patches both.
"""

from __future__ import annotations

import importlib
import sys
import warnings


def alias_module(old: str, new: str) -> None:
    """Make the module being imported as ``old`` the module ``new``, with a DeprecationWarning."""
    warnings.warn(f"{old} moved to {new}", DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)

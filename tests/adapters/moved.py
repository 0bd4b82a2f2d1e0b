"""The check that an adapter module's former name still imports it (configs written before name
classes by module path), with a DeprecationWarning."""

from __future__ import annotations

import importlib
import sys
import warnings


def assert_moved(moves: dict[str, str]) -> None:
    """Each old dotted name of ``moves`` imports as the very module of its new name, and warns.
    Only the old name is imported afresh, so the new module (and what it registered) is untouched."""
    for old, new in moves.items():
        module = importlib.import_module(new)
        sys.modules.pop(old, None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            alias = importlib.import_module(old)
        assert alias is module, old
        package, _, leaf = old.rpartition(".")
        assert getattr(sys.modules[package], leaf) is module, old
        messages = [str(w.message) for w in caught if w.category is DeprecationWarning]
        assert f"{old} moved to {new}" in messages, (old, messages)

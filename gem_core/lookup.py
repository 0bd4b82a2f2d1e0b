"""What the registries need from outside themselves, kept below them so that the core imports
bottom-up (``core`` <- ``registry``, ``components`` <- ``plugins``): the plugin discovery that
runs before the first look-up, and importing a registered ``"module:attr"`` target.

:mod:`gem_core.plugins` installs its loader here when it is imported, which ``import gem_core``
does; the registries call :func:`ensure_discovered` and never import the plugin loader.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from gem_core.errors import GemError

_discover: Callable[[], None] | None = None


def set_discovery(discover: Callable[[], None]) -> None:
    """Make ``discover`` (idempotent, cheap once done) run before every registry look-up."""
    global _discover
    _discover = discover


def ensure_discovered() -> None:
    """Run the installed discovery (the plugins load on the first call)."""
    if _discover is not None:
        _discover()


def load_object(reference: str, *, what: str) -> Any:
    """Import ``"module:attr"`` (attr may be dotted); failures raise a :class:`GemError`."""
    module_name, _, attr = reference.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except ImportError as e:
        if isinstance(e, GemError):
            raise
        raise GemError(f"Cannot import {reference!r} ({what}): {e}") from e
    except AttributeError as e:
        raise GemError(f"Cannot find {reference!r} ({what}): {e}") from e
    return obj

"""Putting GEM's function in place of a training library's, and the library's own back.

Where a library offers no hook (OpenRLHF's experience maker, RL2's ``compute_advantages``, ROLL's
pipeline step), an adapter rebinds the name the library calls. :func:`install` keeps the library's
own function the first time, so installing again replaces GEM's and :func:`uninstall` always puts
the library's back. A replacement that computes a GEM estimator carries its name as
``gem_estimator``, which :func:`installed` reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

SAVED = "_gem_native_{}"  # where the library's own function is kept, on the same owner


def install(owners: Iterable[Any], name: str, replacement: Any) -> None:
    """Bind ``name`` to ``replacement`` on each of ``owners`` (modules or classes)."""
    saved = SAVED.format(name)
    for owner in owners:
        if not hasattr(owner, saved):
            setattr(owner, saved, getattr(owner, name))
        setattr(owner, name, replacement)


def uninstall(owners: Iterable[Any], name: str) -> None:
    """Give each of ``owners`` the library's own ``name`` back (nothing where it was not replaced)."""
    saved = SAVED.format(name)
    for owner in owners:
        if hasattr(owner, saved):
            setattr(owner, name, getattr(owner, saved))
            delattr(owner, saved)


def installed(owner: Any, name: str) -> str | None:
    """The GEM estimator that ``owner.name`` computes, or None for the library's own function."""
    return getattr(getattr(owner, name), "gem_estimator", None)


@contextmanager
def replaced(owner: Any, name: str, replacement: Any) -> Iterator[None]:
    """``owner.name`` is ``replacement`` inside the block, and the library's own after it."""
    install([owner], name, replacement)
    try:
        yield
    finally:
        uninstall([owner], name)

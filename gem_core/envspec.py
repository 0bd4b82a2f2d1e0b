"""How an environment id is described: :class:`EnvSpec`, and :func:`load_object`, which imports
what a ``"module:attr"`` reference names. The registries (:mod:`gem_core.registry`) hold specs;
an environment carries the one it was made from (``env.spec``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gem_core.errors import GemError


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


@dataclass(frozen=True)
class EnvSpec:
    """Everything needed to make an environment by id.

    ``id`` has the form ``category:Name-vN[-variant]``; ``entry_point`` is ``"module:Class"`` (or
    a callable) returning an :class:`~gem_core.core.Env` (or a multi-agent environment);
    ``kwargs`` are the constructor's defaults for this id; ``wrappers`` names registered wrappers
    applied by :func:`make`, innermost first, each a name or a ``(name, options)`` pair;
    ``offline`` is False when the environment needs data that must be downloaded first;
    ``requires`` maps the modules it imports beyond GEM's own to the extra that installs them
    (``{"reasoning_gym": "envs"}``); ``source`` is the plugin (or module) that registered it.
    """

    id: str
    entry_point: str | Callable[..., Any]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    wrappers: tuple[str | tuple[str, Mapping[str, Any]], ...] = ()
    offline: bool = True
    source: str = "<unknown>"
    requires: Mapping[str, str] = field(default_factory=dict)

    @property
    def missing_extras(self) -> list[str]:
        """The extras to install before this environment can be made (its required modules that
        cannot be found; nothing is imported)."""
        import importlib.util

        missing = []
        for module, extra in self.requires.items():
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found and extra not in missing:
                missing.append(extra)
        return missing

    @property
    def name(self) -> str:
        """The id: the key the registry files this spec under."""
        return self.id

    @property
    def target(self) -> str | Callable[..., Any]:
        """The entry point."""
        return self.entry_point

    @property
    def category(self) -> str:
        """The part of the id before the colon, e.g. ``game`` (empty for an id without one)."""
        return self.id.split(":", 1)[0] if ":" in self.id else ""

    @property
    def entry_point_name(self) -> str:
        """The entry point as text, for listings."""
        ep = self.entry_point
        return ep if isinstance(ep, str) else f"{ep.__module__}:{ep.__qualname__}"

    def load(self) -> Callable[..., Any]:
        """The entry point: the class or function that makes the environment, imported on first use
        (a :class:`~gem_core.errors.GemError` names the id when it cannot be imported)."""
        ep = self.entry_point
        if not isinstance(ep, str):
            return ep
        loaded = _entry_points.get(ep)
        if loaded is None:
            loaded = _entry_points[ep] = load_object(ep, what=f"entry point of {self.id}")
        return loaded


_entry_points: dict[str, Callable[..., Any]] = {}

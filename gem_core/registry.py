"""The environment registry: ids to specs, and :func:`make`.

Registration is cheap on purpose: a spec holds the id and a ``"module:Class"`` string, and the
module is imported only when the environment is first made. Plugins register their ids through
the ``gem_register_envs`` hook (see :mod:`gem_core.plugins`); scripts may also call
:func:`register` directly.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import importlib
import inspect
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gem_core.components import apply_wrappers
from gem_core.core import Env
from gem_core.lookup import ensure_discovered, load_object
from gem_core.errors import (
    _NO_DEFAULT,
    DuplicateRegistrationError,
    EnvArgumentError,
    GemError,
    InvalidRegistrationError,
    UnknownEnvError,
)

_ID_PATTERN = re.compile(r"^[A-Za-z0-9_.\-]+(:[^\s:]+)?$")  # the category is optional (gem-llm's "sokoban")
_FAMILY_PATTERN = re.compile(r"^([A-Za-z0-9_.\-]+):\{([A-Za-z_][A-Za-z0-9_]*)\}$")  # "remote:{url}"


@dataclass(frozen=True)
class EnvSpec:
    """Everything needed to make an environment by id.

    ``id`` has the form ``category:Name-vN[-variant]``; ``entry_point`` is ``"module:Class"`` (or
    a callable) returning an :class:`~gem_core.core.Env`; ``kwargs`` are the constructor's
    defaults for this id; ``wrappers`` names registered wrappers applied by :func:`make`, innermost
    first, each a name or a ``(name, options)`` pair; ``offline`` is False when the environment
    needs data that must be downloaded first; ``requires`` maps the modules it imports beyond
    GEM's own to the extra that installs them (``{"reasoning_gym": "envs"}``); ``source`` is the
    plugin (or module) that registered it.
    """

    id: str
    entry_point: str | Callable[..., Env]
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
    def category(self) -> str:
        """The part of the id before the colon, e.g. ``game`` (empty for an id without one)."""
        return self.id.split(":", 1)[0] if ":" in self.id else ""

    @property
    def entry_point_name(self) -> str:
        """The entry point as text, for listings."""
        ep = self.entry_point
        return ep if isinstance(ep, str) else f"{ep.__module__}:{ep.__qualname__}"

    def make(self, **kwargs: Any) -> Env:
        """Make the environment this spec describes (see :func:`gem_core.make`)."""
        return _make_from_spec(self, kwargs)


_registry: dict[str, EnvSpec] = {}
_lock = threading.RLock()
_constructors: dict[str | Callable[..., Env], Callable[..., Env]] = {}
_accepted: dict[Callable[..., Env], dict[str, object] | None] = {}


def register(
    id: str,
    entry_point: str | Callable[..., Env],
    *,
    description: str = "",
    wrappers: Sequence[str | tuple[str, Mapping[str, Any]]] = (),
    offline: bool = True,
    kwargs: Mapping[str, Any] | None = None,
    source: str | None = None,
    requires: Mapping[str, str] | None = None,
    **env_kwargs: Any,
) -> EnvSpec:
    """Register an environment id.

    Constructor defaults are given as keywords (``register("game:X-v0", "pkg.mod:X",
    max_turns=7)``) or as a ``kwargs`` mapping. An id ``category:{keyword}`` registers a family:
    every id ``category:<rest>`` not registered itself makes this spec with ``keyword=<rest>``
    (``remote:{url}``: ``make("remote:http://host:8000")``). Registering an id twice raises
    :class:`~gem_core.errors.DuplicateRegistrationError` naming both sources.
    """
    spec = build_spec(
        id, entry_point, description=description, wrappers=wrappers, offline=offline,
        kwargs={**(kwargs or {}), **env_kwargs}, source=source or _caller_module(), requires=requires,
    )
    add_spec(spec)
    return spec


def build_spec(
    id: str,
    entry_point: str | Callable[..., Env],
    *,
    description: str,
    wrappers: Sequence[str | tuple[str, Mapping[str, Any]]],
    offline: bool,
    kwargs: Mapping[str, Any],
    source: str,
    requires: Mapping[str, str] | None = None,
) -> EnvSpec:
    """Validate a registration and return its spec (without adding it)."""
    if not isinstance(id, str) or not _ID_PATTERN.match(id):
        raise InvalidRegistrationError(
            f"Invalid environment id {id!r} (from {source}): ids look like 'category:Name-v0' (or 'name' alone, as gem-llm allows)."
        )
    if isinstance(entry_point, str):
        module, _, attr = entry_point.partition(":")
        if not module or not attr:
            raise InvalidRegistrationError(
                f"Invalid entry point {entry_point!r} for {id} (from {source}): "
                "expected 'package.module:ClassName'."
            )
    elif not callable(entry_point):
        raise InvalidRegistrationError(f"Entry point for {id} (from {source}) is not callable.")
    return EnvSpec(
        id=id, entry_point=entry_point, kwargs=dict(kwargs), description=description,
        wrappers=tuple(wrappers), offline=offline, source=source, requires=dict(requires or {}),
    )


def add_spec(spec: EnvSpec) -> None:
    """Add a validated spec; an id already taken raises, naming both sources."""
    with _lock:
        existing = _registry.get(spec.id)
        if existing is not None:
            raise DuplicateRegistrationError("environment", spec.id, existing.source, spec.source)
        _registry[spec.id] = spec


def deregister(id: str) -> None:
    """Remove an id (mainly for tests and interactive sessions)."""
    with _lock:
        _registry.pop(id, None)


def spec(id: str) -> EnvSpec:
    """The spec registered under ``id``; unknown ids raise an error naming the closest ones."""
    ensure_discovered()
    try:
        return _registry[id]
    except KeyError:
        member = _family_member(id)
        if member is None:
            raise UnknownEnvError(id, _registry) from None
        return member


def _family_member(id: str) -> EnvSpec | None:
    """The spec of ``id`` in a family of ids registered as ``category:{keyword}`` (``remote:{url}``):
    the family's spec, with the rest of the id given to the constructor as ``keyword``."""
    category, colon, rest = id.partition(":")
    if not colon or not rest:
        return None
    for family in list(_registry.values()):
        match = _FAMILY_PATTERN.match(family.id)
        if match and match.group(1) == category:
            return dataclasses.replace(family, id=id, kwargs={**family.kwargs, match.group(2): rest})
    return None


def list_envs(pattern: str | None = None) -> list[EnvSpec]:
    """Registered specs sorted by id, optionally filtered by a glob or a case-insensitive
    substring of the id."""
    ensure_discovered()
    specs = sorted(_registry.values(), key=lambda s: s.id)
    if not pattern:
        return specs
    if any(c in pattern for c in "*?["):
        return [s for s in specs if fnmatch.fnmatchcase(s.id.lower(), pattern.lower())]
    needle = pattern.lower()
    return [s for s in specs if needle in s.id.lower()]


def make(id: str | None = None, **kwargs: Any) -> Env:
    """Make the environment registered under ``id``.

    Keyword arguments override the spec's constructor defaults; a keyword the constructor does
    not accept raises :class:`~gem_core.errors.EnvArgumentError` listing the accepted ones.
    ``make(env_id=...)``, gem-llm's spelling, names the id too.
    """
    if id is None:
        if "env_id" not in kwargs:
            raise GemError("make() needs an environment id: make('game:GuessTheNumber-v0'); `gem envs` lists them.")
        id = kwargs.pop("env_id")
    return _make_from_spec(spec(id), kwargs)


def _make_from_spec(env_spec: EnvSpec, kwargs: Mapping[str, Any]) -> Env:
    constructor = _constructor(env_spec)
    accepted = _accepted_parameters(constructor)
    if accepted is not None:
        unknown = set(kwargs) - set(accepted)
        if unknown:
            raise EnvArgumentError(env_spec.id, unknown, accepted)
    merged = {**env_spec.kwargs, **kwargs}
    env = constructor(**merged)
    if not isinstance(env, Env):
        raise GemError(
            f"Entry point {env_spec.entry_point_name} of {env_spec.id} returned "
            f"{type(env).__name__}, not a gem_core.Env."
        )
    env.unwrapped.spec = dataclasses.replace(env_spec, kwargs=merged) if kwargs else env_spec
    if env_spec.wrappers:
        env = apply_wrappers(env, env_spec.wrappers)
    return env


def _constructor(env_spec: EnvSpec) -> Callable[..., Env]:
    ep = env_spec.entry_point
    if not isinstance(ep, str):
        return ep
    constructor = _constructors.get(ep)
    if constructor is None:
        constructor = _constructors[ep] = load_object(ep, what=f"entry point of {env_spec.id}")
    return constructor


def _accepted_parameters(constructor: Callable[..., Env]) -> dict[str, object] | None:
    """Keyword parameters with their defaults, or None when ``**kwargs`` accepts anything."""
    try:
        return _accepted[constructor]
    except (KeyError, TypeError):
        pass
    try:
        parameters = inspect.signature(constructor).parameters.values()
    except (TypeError, ValueError):
        result = None
    else:
        if any(p.kind is p.VAR_KEYWORD for p in parameters):
            result = None
        else:
            result = {
                p.name: _NO_DEFAULT if p.default is p.empty else p.default
                for p in parameters
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            }
    try:
        _accepted[constructor] = result
    except TypeError:
        pass
    return result


def _caller_module() -> str:
    frame = inspect.currentframe()
    try:
        caller = frame.f_back.f_back if frame and frame.f_back else None  # type: ignore[union-attr]
        return caller.f_globals.get("__name__", "<unknown>") if caller else "<unknown>"
    finally:
        del frame

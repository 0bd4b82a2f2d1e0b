"""The registries: environment ids, wrappers, tools, advantage estimators and ``gem`` commands,
each a name-to-entry :class:`Registry`, and :func:`make`.

Registration is cheap on purpose: an entry holds its name and a ``"module:attr"`` string, and the
module is imported only when the entry is first used. Plugins register through the
``gem_register_<kind>`` hooks (see :mod:`gem_core.plugins`, which loads them before the first
look-up); scripts may also call :func:`register` directly.

What an entry's target is, per registry:

* environment (:data:`ENVS`): an :class:`EnvSpec` whose entry point returns an
  :class:`~gem_core.core.Env` or a :class:`~gem_core.multiagent.MultiAgentEnv`;
* wrapper: a callable ``factory(env, **options) -> Env`` (usually a :class:`~gem_core.Wrapper`
  subclass);
* tool: a callable ``factory(**options)`` returning a tool object;
* estimator: ``estimator(rewards, *, gamma, group_ids=None) -> list[numpy.ndarray]``;
* command: a click command, offered by the ``gem`` command as ``gem <name>``;
* exploit: ``exploit(context) -> [Attack, ...]``, attacks the reward-hacking probe plays
  (:mod:`gem_core.hacks`), none for an environment it does not apply to;
* key (:data:`KEYS`): a :class:`~gem_core.keys.Key`, the files of a pack that hold its answers
  and tests, as paths (never imported: see :mod:`gem_core.keys`).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import inspect
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from gem_core.core import BaseEnv, Env
from gem_core.multiagent import MultiAgentEnv
from gem_core.envspec import EnvSpec, load_object
from gem_core.keys import Key, build_key
from gem_core.errors import (
    NO_DEFAULT,
    DuplicateRegistrationError,
    EnvArgumentError,
    GemError,
    InvalidRegistrationError,
    UnknownEnvError,
    UnknownNameError,
)

_ID_PATTERN = re.compile(r"^[A-Za-z0-9_.\-]+(:[^\s:]+)?$")  # the category is optional (gem-llm's "sokoban")
_FAMILY_PATTERN = re.compile(r"^([A-Za-z0-9_.\-]+):\{([A-Za-z_][A-Za-z0-9_]*)\}$")  # "remote:{url}"

_discover: Callable[..., None] | None = None


def set_discovery(discover: Callable[..., None]) -> None:
    """Make ``discover`` (idempotent, cheap once done) run before every registry look-up:
    ``discover()`` finds everything, ``discover(kind, name)`` at least what is likely to register
    ``name`` in the registry of that kind (the look-up asks for everything if it is not there).

    :mod:`gem_core.plugins` installs its loader here when imported, so that the registries never
    import the plugin loader."""
    global _discover
    _discover = discover


def ensure_discovered(kind: str | None = None, name: str | None = None) -> None:
    """Run the installed discovery (the plugins load on the first call): of everything, or of what
    is likely to register ``name`` in the registry of ``kind``."""
    if _discover is not None:
        _discover(kind, name)


@dataclass(frozen=True)
class Component:
    """One registered wrapper, tool, estimator or command; ``target`` is ``"module:attr"`` or the
    object itself."""

    kind: str
    name: str
    target: Any
    description: str = ""
    source: str = "<unknown>"

    @property
    def target_name(self) -> str:
        t = self.target
        if isinstance(t, str):
            return t
        return f"{getattr(t, '__module__', '?')}:{getattr(t, '__qualname__', repr(t))}"


Entry = TypeVar("Entry", EnvSpec, Component, Key)


class Registry(Generic[Entry]):
    """Names to entries of one kind, with lazy import of their targets.

    ``build`` validates a registration's arguments into an entry; :meth:`register` takes the same
    arguments and adds the entry, and plugins stage entries with :meth:`build` before adding them.
    """

    def __init__(self, kind: str, build: Callable[..., Entry]):
        self.kind = kind
        self.build = build
        self._entries: dict[str, Entry] = {}
        self._loaded: dict[str, Any] = {}
        self._lock = threading.RLock()

    def register(self, *args: Any, **kwargs: Any) -> Entry:
        """Build an entry from ``build``'s arguments and add it."""
        entry = self.build(*args, **kwargs)
        self.add(entry)
        return entry

    def add(self, entry: Entry) -> None:
        """Add a built entry; a name taken twice raises, naming both sources."""
        with self._lock:
            existing = self._entries.get(entry.name)
            if existing is not None:
                raise DuplicateRegistrationError(self.kind, entry.name, existing.source, entry.source)
            self._entries[entry.name] = entry

    def remove(self, name: str) -> None:
        with self._lock:
            self._entries.pop(name, None)
            self._loaded.pop(name, None)

    def find(self, name: str) -> Entry | None:
        """The entry for ``name``, or None (found without loading every plugin where it can be)."""
        ensure_discovered(self.kind, name)
        entry = self._entries.get(name)
        if entry is None:
            ensure_discovered()
            entry = self._entries.get(name)
        return entry

    def component(self, name: str) -> Entry:
        """The entry for ``name``; unknown names raise an error naming the closest."""
        entry = self.find(name)
        if entry is None:
            raise UnknownNameError(self.kind, name, self._entries)
        return entry

    def get(self, name: str) -> Any:
        """The object registered under ``name``, imported on first use."""
        try:
            return self._loaded[name]
        except KeyError:
            pass
        target = self.component(name).target
        if isinstance(target, str):
            target = load_object(target, what=f"{self.kind} {name!r}")
        self._loaded[name] = target
        return target

    def names(self) -> list[str]:
        ensure_discovered()
        return sorted(self._entries)

    def components(self) -> list[Entry]:
        ensure_discovered()
        return [self._entries[n] for n in sorted(self._entries)]

    def __contains__(self, name: object) -> bool:
        ensure_discovered()
        return name in self._entries


def build_spec(
    id: str,
    entry_point: str | Callable[..., Env],
    *,
    description: str = "",
    wrappers: Sequence[str | tuple[str, Mapping[str, Any]]] = (),
    offline: bool = True,
    kwargs: Mapping[str, Any] | None = None,
    source: str = "<unknown>",
    requires: Mapping[str, str] | None = None,
    **env_kwargs: Any,
) -> EnvSpec:
    """Validate an environment's registration and return its spec (without adding it).

    Constructor defaults are given as keywords (``max_turns=7``) or as a ``kwargs`` mapping; the
    other keywords are :class:`EnvSpec`'s fields.
    """
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
        id=id, entry_point=entry_point, kwargs={**(kwargs or {}), **env_kwargs}, description=description,
        wrappers=tuple(wrappers), offline=offline, source=source, requires=dict(requires or {}),
    )


def _component_builder(kind: str) -> Callable[..., Component]:
    def build(name: str, target: Any, *, description: str = "", source: str = "<unknown>") -> Component:
        """Validate a registration and return the component (without adding it)."""
        if not isinstance(name, str) or not name or any(c.isspace() or c == "," for c in name):
            raise InvalidRegistrationError(f"Invalid {kind} name {name!r} (from {source}).")
        if isinstance(target, str) and ":" not in target:
            raise InvalidRegistrationError(
                f"Invalid target {target!r} for {kind} {name!r} (from {source}): "
                "expected 'package.module:attribute'."
            )
        return Component(kind, name, target, description, source)

    return build


ENVS: Registry[EnvSpec] = Registry("environment", build_spec)
WRAPPERS: Registry[Component] = Registry("wrapper", _component_builder("wrapper"))
TOOLS: Registry[Component] = Registry("tool", _component_builder("tool"))
ESTIMATORS: Registry[Component] = Registry("estimator", _component_builder("estimator"))
COMMANDS: Registry[Component] = Registry("command", _component_builder("command"))
EXPLOITS: Registry[Component] = Registry("exploit", _component_builder("exploit"))
KEYS: Registry[Key] = Registry("key", build_key)

#: Each registry under the plural its plugin hook is named for (``gem_register_<kind>``).
REGISTRIES: dict[str, Registry[Any]] = {
    "envs": ENVS,
    "wrappers": WRAPPERS,
    "tools": TOOLS,
    "estimators": ESTIMATORS,
    "commands": COMMANDS,
    "exploits": EXPLOITS,
    "keys": KEYS,
}

_accepted: dict[Callable[..., Env], dict[str, object] | None] = {}


def register(id: str, entry_point: str | Callable[..., Env], **options: Any) -> EnvSpec:
    """Register an environment id; ``options`` are :func:`build_spec`'s keywords.

    Constructor defaults are given as keywords (``register("game:X-v0", "pkg.mod:X",
    max_turns=7)``) or as a ``kwargs`` mapping; ``description``, ``wrappers``, ``offline``,
    ``requires`` and ``source`` fill the :class:`EnvSpec`. An id ``category:{keyword}`` registers a
    family: every id ``category:<rest>`` not registered itself makes this spec with
    ``keyword=<rest>`` (``remote:{url}``: ``make("remote:http://host:8000")``). Registering an id
    twice raises :class:`~gem_core.errors.DuplicateRegistrationError` naming both sources.
    """
    options["source"] = options.get("source") or _caller_module()
    return ENVS.register(id, entry_point, **options)


def add_spec(spec: EnvSpec) -> None:
    """Add a validated spec; an id already taken raises, naming both sources."""
    ENVS.add(spec)


def deregister(id: str) -> None:
    """Remove an id (mainly for tests and interactive sessions)."""
    ENVS.remove(id)


def spec(id: str) -> EnvSpec:
    """The spec registered under ``id``; unknown ids raise an error naming the closest ones."""
    found = ENVS.find(id) or _family_member(id)
    if found is None:
        raise UnknownEnvError(id, ENVS.names())
    return found


def _family_member(id: str) -> EnvSpec | None:
    """The spec of ``id`` in a family of ids registered as ``category:{keyword}`` (``remote:{url}``):
    the family's spec, with the rest of the id given to the constructor as ``keyword``."""
    category, colon, rest = id.partition(":")
    if not colon or not rest:
        return None
    for family in ENVS.components():
        match = _FAMILY_PATTERN.match(family.id)
        if match and match.group(1) == category:
            return dataclasses.replace(family, id=id, kwargs={**family.kwargs, match.group(2): rest})
    return None


def list_envs(pattern: str | None = None) -> list[EnvSpec]:
    """Registered specs sorted by id, optionally filtered by a glob or a case-insensitive
    substring of the id."""
    specs = ENVS.components()
    if not pattern:
        return specs
    if any(c in pattern for c in "*?["):
        return [s for s in specs if fnmatch.fnmatchcase(s.id.lower(), pattern.lower())]
    needle = pattern.lower()
    return [s for s in specs if needle in s.id.lower()]


def declared_keys(source: str | None = None) -> list[Key]:
    """The declared answer keys (see :mod:`gem_core.keys`); those registered by ``source`` (e.g.
    ``"plugin 'qa'"``, an environment spec's ``source``) if given."""
    return [key for key in KEYS.components() if source is None or key.source == source]


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


def is_multiagent(env: str | EnvSpec) -> bool:
    """Whether :func:`make` gives a multi-agent environment for an id (or its spec), told without
    making one: its entry point is a :class:`~gem_core.multiagent.MultiAgentEnv` class and the id
    applies no wrapper (a single-agent view such as ``self_play`` is a wrapper). Imports the entry
    point."""
    env_spec = spec(env) if isinstance(env, str) else env
    constructor = env_spec.load()
    return not env_spec.wrappers and isinstance(constructor, type) and issubclass(constructor, MultiAgentEnv)


def _make_from_spec(env_spec: EnvSpec, kwargs: Mapping[str, Any]) -> Env:
    constructor = env_spec.load()
    accepted = _accepted_parameters(constructor)
    if accepted is not None:
        unknown = set(kwargs) - set(accepted)
        if unknown:
            raise EnvArgumentError(env_spec.id, unknown, accepted)
    merged = {**env_spec.kwargs, **kwargs}
    env = constructor(**merged)
    if not isinstance(env, BaseEnv):
        raise GemError(
            f"Entry point {env_spec.entry_point_name} of {env_spec.id} returned "
            f"{type(env).__name__}, not a gem_core.Env or gem_core.MultiAgentEnv."
        )
    env.unwrapped.spec = dataclasses.replace(env_spec, kwargs=merged) if kwargs else env_spec
    if env_spec.wrappers:
        env = apply_wrappers(env, env_spec.wrappers)
    return env


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
                p.name: NO_DEFAULT if p.default is p.empty else p.default
                for p in parameters
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            }
    try:
        _accepted[constructor] = result
    except TypeError:
        pass
    return result


def get_wrapper(name: str) -> Any:
    """The wrapper factory registered under ``name``."""
    return WRAPPERS.get(name)


def get_tool(name: str) -> Any:
    """The tool factory registered under ``name``."""
    return TOOLS.get(name)


def get_estimator(name: str) -> Any:
    """The advantage estimator registered under ``name`` (e.g. ``"rebn"``)."""
    return ESTIMATORS.get(name)


def get_command(name: str) -> Any:
    """The ``gem`` command registered under ``name``."""
    return COMMANDS.get(name)


def apply_wrappers(env: Any, wrappers: Iterable[str | tuple[str, Mapping[str, Any]]]) -> Any:
    """Wrap ``env`` with registered wrappers, innermost first; each item is a name or a
    ``(name, options)`` pair."""
    for item in wrappers:
        name, options = (item, {}) if isinstance(item, str) else item
        env = get_wrapper(name)(env, **options)
    return env


def _caller_module() -> str:
    frame = inspect.currentframe()
    try:
        caller = frame.f_back.f_back if frame and frame.f_back else None  # type: ignore[union-attr]
        return caller.f_globals.get("__name__", "<unknown>") if caller else "<unknown>"
    finally:
        del frame

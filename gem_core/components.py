"""Named components that plugins register: wrappers, tools, advantage estimators, adapters.

Each kind has its own :class:`ComponentRegistry`. As with environments, a registration names a
``"module:attr"`` string that is imported on first use, so loading plugins stays cheap.

What a component is, per kind:

* wrapper: a callable ``factory(env, **options) -> Env`` (usually a :class:`~gem_core.Wrapper`
  subclass);
* tool: a callable ``factory(**options)`` returning a tool object;
* estimator: ``estimator(rewards, *, gamma, group_ids=None) -> list[numpy.ndarray]``;
* adapter: a click command, offered by the ``gem`` command as ``gem <name>``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gem_core.errors import DuplicateRegistrationError, InvalidRegistrationError, UnknownNameError
from gem_core.lookup import ensure_discovered, load_object


@dataclass(frozen=True)
class Component:
    """One registered component; ``target`` is ``"module:attr"`` or the object itself."""

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


class ComponentRegistry:
    """Names to components of one kind, with lazy import of their targets."""

    def __init__(self, kind: str):
        self.kind = kind
        self._components: dict[str, Component] = {}
        self._loaded: dict[str, Any] = {}
        self._lock = threading.RLock()

    def register(self, name: str, target: Any, *, description: str = "", source: str = "<unknown>") -> Component:
        """Register ``target`` under ``name``; a name taken twice raises, naming both sources."""
        component = self.build(name, target, description=description, source=source)
        self.add(component)
        return component

    def build(self, name: str, target: Any, *, description: str, source: str) -> Component:
        """Validate a registration and return the component (without adding it)."""
        if not isinstance(name, str) or not name or any(c.isspace() or c == "," for c in name):
            raise InvalidRegistrationError(f"Invalid {self.kind} name {name!r} (from {source}).")
        if isinstance(target, str) and ":" not in target:
            raise InvalidRegistrationError(
                f"Invalid target {target!r} for {self.kind} {name!r} (from {source}): "
                "expected 'package.module:attribute'."
            )
        return Component(self.kind, name, target, description, source)

    def add(self, component: Component) -> None:
        with self._lock:
            existing = self._components.get(component.name)
            if existing is not None:
                raise DuplicateRegistrationError(self.kind, component.name, existing.source, component.source)
            self._components[component.name] = component

    def remove(self, name: str) -> None:
        with self._lock:
            self._components.pop(name, None)
            self._loaded.pop(name, None)

    def component(self, name: str) -> Component:
        """The registration for ``name``; unknown names raise an error naming the closest."""
        ensure_discovered()
        try:
            return self._components[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, self._components) from None

    def get(self, name: str) -> Any:
        """The object registered under ``name``, imported on first use."""
        try:
            return self._loaded[name]
        except KeyError:
            pass
        component = self.component(name)
        target = component.target
        if isinstance(target, str):
            target = load_object(target, what=f"{self.kind} {name!r}")
        self._loaded[name] = target
        return target

    def names(self) -> list[str]:
        ensure_discovered()
        return sorted(self._components)

    def components(self) -> list[Component]:
        ensure_discovered()
        return [self._components[n] for n in sorted(self._components)]

    def __contains__(self, name: object) -> bool:
        ensure_discovered()
        return name in self._components


WRAPPERS = ComponentRegistry("wrapper")
TOOLS = ComponentRegistry("tool")
ESTIMATORS = ComponentRegistry("estimator")
ADAPTERS = ComponentRegistry("adapter")

REGISTRIES: dict[str, ComponentRegistry] = {
    "wrappers": WRAPPERS,
    "tools": TOOLS,
    "estimators": ESTIMATORS,
    "adapters": ADAPTERS,
}


def get_wrapper(name: str) -> Any:
    """The wrapper factory registered under ``name``."""
    return WRAPPERS.get(name)


def get_tool(name: str) -> Any:
    """The tool factory registered under ``name``."""
    return TOOLS.get(name)


def get_estimator(name: str) -> Any:
    """The advantage estimator registered under ``name`` (e.g. ``"rebn"``)."""
    return ESTIMATORS.get(name)


def get_adapter(name: str) -> Any:
    """The adapter command registered under ``name``."""
    return ADAPTERS.get(name)


def apply_wrappers(env: Any, wrappers: Iterable[str | tuple[str, Mapping[str, Any]]]) -> Any:
    """Wrap ``env`` with registered wrappers, innermost first; each item is a name or a
    ``(name, options)`` pair."""
    for item in wrappers:
        name, options = (item, {}) if isinstance(item, str) else item
        env = get_wrapper(name)(env, **options)
    return env

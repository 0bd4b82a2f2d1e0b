"""Plugin discovery and loading.

One :class:`pluggy.PluginManager` holds every plugin: gem_core's own defaults (its wrappers,
tools and estimators), then each module exposed under the ``gem`` entry-point group, the built-in
environment packs included. Plugins load on first need (``make``, ``list_envs``, a registry
look-up), never on ``import gem_core``.

The environment variable ``GEM_PLUGINS`` limits which entry-point plugins load: unset, empty or
``all`` loads all; ``none`` loads none; ``a,b`` loads only those names. gem_core's defaults always
load.

A plugin that fails to import, raises while registering, or registers a name already taken is
reported by name (a logged warning and ``gem plugins``); what it registered before failing is
discarded, and the other plugins load normally.
"""

from __future__ import annotations

import importlib
import os
import threading
from typing import TYPE_CHECKING, Any

import pluggy

from gem_core import hookspecs, registry
from gem_core.errors import GemError

if TYPE_CHECKING:
    from importlib import metadata

ENTRY_POINT_GROUP = "gem"
PLUGINS_ENV_VAR = "GEM_PLUGINS"
DEFAULT_PLUGINS = {"core": "gem_core.defaults"}  # name -> module
OWN_DISTRIBUTION = "gem-adapters"
KINDS = tuple(registry.REGISTRIES)  # envs, wrappers, tools, estimators, commands, exploits, keys


def _warn(message: str, *args: Any) -> None:
    import logging  # imported here: `import gem_core` imports this module and stays light

    logging.getLogger("gem_core.plugins").warning(message, *args)


class PluginReport:
    """What one plugin registered, and what went wrong. (A plain class: a dataclass would double
    the cost of ``import gem_core``'s import of this module.)"""

    def __init__(self, name: str, origin: str):
        self.name, self.origin = name, origin
        self.registered: dict[str, list[str]] = {kind: [] for kind in KINDS}
        self.errors: list[str] = []

    def __repr__(self) -> str:
        return f"PluginReport({self.name!r}, {self.origin!r}, errors={self.errors!r})"

    @property
    def ok(self) -> bool:
        return not self.errors


_manager: pluggy.PluginManager | None = None
_reports: dict[str, PluginReport] = {}
_state = "unloaded"  # unloaded -> loading -> loaded
_lock = threading.RLock()


def plugin_manager() -> pluggy.PluginManager:
    """The single plugin manager (plugins are loaded on first call)."""
    load_plugins()
    assert _manager is not None
    return _manager


def plugin_reports() -> list[PluginReport]:
    """One report per plugin, in load order."""
    load_plugins()
    return list(_reports.values())


def selected_plugins() -> set[str] | None:
    """Entry-point plugin names allowed by ``GEM_PLUGINS``; None means all."""
    value = os.environ.get(PLUGINS_ENV_VAR, "").strip()
    if value.lower() in ("", "all"):
        return None
    if value.lower() == "none":
        return set()
    return {name.strip() for name in value.split(",") if name.strip()}


def load_plugins() -> None:
    """Load every plugin once; later calls return at once."""
    global _state, _manager
    if _state == "loaded":
        return
    with _lock:
        if _state != "unloaded":  # another thread loaded them meanwhile, or a plugin re-entered
            return
        _state = "loading"
        try:
            _manager = pluggy.PluginManager(ENTRY_POINT_GROUP)
            _manager.add_hookspecs(hookspecs)
            for name, module_name in DEFAULT_PLUGINS.items():
                _add_plugin(name, f"built in, module {module_name}",
                            lambda m=module_name: importlib.import_module(m))
            allowed = selected_plugins()
            seen: set[str] = set()
            for ep in _entry_points():
                if allowed is not None and ep.name not in allowed:
                    continue
                seen.add(ep.name)
                if ep.name in _reports:
                    report = _reports[ep.name]
                    report.errors.append(
                        f"another plugin named {ep.name!r} ({_origin(ep)}) was skipped"
                    )
                    _warn("GEM plugin name %r is used twice; kept %s", ep.name, report.origin)
                    continue
                _add_plugin(ep.name, _origin(ep), ep.load)
            for missing in sorted((allowed or set()) - seen):
                report = _reports[missing] = PluginReport(missing, "not installed")
                report.errors.append(f"{PLUGINS_ENV_VAR} names {missing!r}, but no such plugin is installed")
            _call_register_hooks(_manager)
        finally:
            _state = "loaded"


def _entry_points() -> list[metadata.EntryPoint]:
    from importlib import metadata  # read only when the plugins load, so `import gem_core` stays light

    unique: dict[tuple[str, str], metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        unique.setdefault((ep.name, ep.value), ep)

    def order(ep: metadata.EntryPoint) -> tuple[bool, str]:
        dist = getattr(ep, "dist", None)
        return (getattr(dist, "name", None) != OWN_DISTRIBUTION, ep.name)

    return sorted(unique.values(), key=order)


def _origin(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    where = f"{dist.name} {dist.version}" if dist is not None else "unknown distribution"
    return f"{where}, entry point {ep.value}"


def _add_plugin(name: str, origin: str, load: Any) -> None:
    report = _reports[name] = PluginReport(name, origin)
    try:
        module = load()
        assert _manager is not None
        _manager.register(module, name=name)
        unknown = sorted(h.name for h in _manager.get_hookcallers(module) or () if h.spec is None)
        if unknown:
            report.errors.append(f"implements {', '.join(unknown)}, which GEM does not define (its hooks: "
                                 f"{', '.join(f'gem_register_{kind}' for kind in KINDS)}); nothing there is registered")
            _warn("GEM plugin %r implements unknown hooks %s; run `gem plugins` for details.", name, unknown)
    except Exception as e:  # a broken plugin must not take the others down
        report.errors.append(f"failed to load: {type(e).__name__}: {e}")
        _warn("GEM plugin %r failed to load (%s: %s); the other plugins are unaffected. "
                       "Run `gem plugins` for details.", name, type(e).__name__, e)


def _call_register_hooks(manager: pluggy.PluginManager) -> None:
    """Call each plugin's register hooks one plugin at a time, so one failure stays local."""
    for kind, kind_registry in registry.REGISTRIES.items():
        hook_name = f"gem_register_{kind}"
        for impl in getattr(manager.hook, hook_name).get_hookimpls():  # defaults, our packs, then others
            _register_from(impl, hook_name, kind, kind_registry)


def _register_from(impl: Any, hook_name: str, kind: str, kind_registry: registry.Registry[Any]) -> None:
    """Stage what one plugin registers through one hook, then add it all, or nothing if the hook
    raised."""
    report = _reports[impl.plugin_name]
    source = f"plugin {impl.plugin_name!r}"
    staged: list[Any] = []

    def register(*args: Any, **kwargs: Any) -> None:
        staged.append(kind_registry.build(*args, **{**kwargs, "source": source}))

    try:
        impl.function(register=register)
    except Exception as e:
        report.errors.append(f"{hook_name} raised {type(e).__name__}: {e}")
        _warn("GEM plugin %r failed in %s (%s: %s); nothing it registered there is kept.",
              impl.plugin_name, hook_name, type(e).__name__, e)
        return
    for entry in staged:
        try:
            kind_registry.add(entry)
        except GemError as e:
            report.errors.append(str(e))
            _warn("GEM plugin %r: %s", impl.plugin_name, e)
        else:
            report.registered[kind].append(entry.name)


registry.set_discovery(load_plugins)

"""Plugin discovery and loading.

One :class:`pluggy.PluginManager` holds every plugin: gem_core's own defaults (its wrappers,
tools and estimators), then each module exposed under the ``gem`` entry-point group, the built-in
environment packs included. Plugins load on first need (``make``, ``list_envs``, a registry
look-up), never on ``import gem_core``, and no more of them than the look-up needs: an
environment id is looked for first in the built-in pack named by its category (``game`` for
``game:GuessTheNumber-v0``), and a wrapper, tool or other name first among gem_core's own; only a
name not found there loads every plugin (a listing always does). So making a game imports no
module of another pack.

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
import sys
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

    def __init__(self, name: str, origin: str | Any):
        self.name, self._origin = name, origin  # text, or a callable giving it (read when first asked)
        self.registered: dict[str, list[str]] = {kind: [] for kind in KINDS}
        self.errors: list[str] = []

    @property
    def origin(self) -> str:
        """Where the plugin comes from: its distribution, version and entry point."""
        if callable(self._origin):
            self._origin = self._origin()
        return self._origin

    def __repr__(self) -> str:
        return f"PluginReport({self.name!r}, {self.origin!r}, errors={self.errors!r})"

    @property
    def ok(self) -> bool:
        return not self.errors


_manager: pluggy.PluginManager | None = None
_reports: dict[str, PluginReport] = {}
_state = "unloaded"  # unloaded -> partial (core and some built-in packs) -> loaded (every plugin)
_loading = False  # a load is under way (a plugin that looks a name up while it loads gets no more)
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


def load_plugins(kind: str | None = None, name: str | None = None) -> None:
    """Load the plugins once; later calls return at once. With the ``kind`` of a registry and a
    ``name`` to look up there, load only what is likely to register it (see the module
    documentation); the caller asks again, without them, when the name is not found."""
    global _state, _loading
    if _state == "loaded":
        return
    with _lock:
        if _state == "loaded" or _loading:  # another thread loaded them meanwhile, or a plugin re-entered
            return
        _loading = True
        try:
            if _state == "unloaded":
                _start()
                _state = "partial"
            if kind is None:
                _load_every_plugin()
                _state = "loaded"
            elif kind == "environment" and name and ":" in name:
                _load_own_pack(name.partition(":")[0])
        finally:
            _loading = False


def _start() -> None:
    """The plugin manager, with gem_core's defaults registered."""
    global _manager
    _manager = pluggy.PluginManager(ENTRY_POINT_GROUP)
    _manager.add_hookspecs(hookspecs)
    for name, module_name in DEFAULT_PLUGINS.items():
        _add_plugin(name, f"built in, module {module_name}", lambda m=module_name: importlib.import_module(m))
    _call_register_hooks(_manager, set(DEFAULT_PLUGINS))


def _load_own_pack(name: str) -> None:
    """The built-in plugin ``name`` (this distribution's entry point of that name), if allowed and
    not loaded yet."""
    allowed = selected_plugins()
    if name in _reports or (allowed is not None and name not in allowed):
        return
    value = _own_entry_points().get(name)
    if value is not None:
        _add_plugin(name, _own_origin(value), lambda: _load_reference(value))
        assert _manager is not None
        _call_register_hooks(_manager, {name})


def _load_every_plugin() -> None:
    """Every entry-point plugin not loaded yet (ours first), and the names GEM_PLUGINS asks for
    that are not installed."""
    assert _manager is not None
    allowed = selected_plugins()
    loaded = set(_reports)
    seen: set[str] = set()
    added: set[str] = set()
    own = set(_own_entry_points().items())
    for ep in _entry_points(own):
        if allowed is not None and ep.name not in allowed:
            continue
        seen.add(ep.name)
        ours = (ep.name, ep.value) in own
        if ep.name in _reports:
            if ep.name in loaded and ours:
                continue  # loaded already, by a look-up
            report = _reports[ep.name]
            report.errors.append(f"another plugin named {ep.name!r} ({_origin(ep)}) was skipped")
            _warn("GEM plugin name %r is used twice; kept %s", ep.name, report.origin)
            continue
        _add_plugin(ep.name, _own_origin(ep.value) if ours else (lambda ep=ep: _origin(ep)), ep.load)
        added.add(ep.name)
    for missing in sorted((allowed or set()) - seen):
        report = _reports[missing] = PluginReport(missing, "not installed")
        report.errors.append(f"{PLUGINS_ENV_VAR} names {missing!r}, but no such plugin is installed")
    _call_register_hooks(_manager, added)


def _own_entry_points() -> dict[str, str]:
    """This distribution's entry points of the ``gem`` group, name -> ``module[:attr]`` (none when
    it is not installed), read from its own metadata alone. Its ``dist-info`` folder is looked for
    on ``sys.path`` as importlib.metadata looks (the first one found), without importing that
    module, which costs more than loading a pack; importlib.metadata reads it otherwise."""
    prefix = OWN_DISTRIBUTION.replace("-", "_") + "-"
    for folder in sys.path:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith(prefix) and name.endswith(".dist-info"):
                try:
                    with open(os.path.join(folder, name, "entry_points.txt"), encoding="utf-8") as f:
                        return _section(f.read(), ENTRY_POINT_GROUP)
                except OSError:
                    break
    from importlib import metadata

    try:
        eps = metadata.distribution(OWN_DISTRIBUTION).entry_points.select(group=ENTRY_POINT_GROUP)
    except metadata.PackageNotFoundError:
        return {}
    return {ep.name: ep.value for ep in eps}


def _section(text: str, group: str) -> dict[str, str]:
    """The ``name = value`` lines of ``[group]`` in an ``entry_points.txt``."""
    found: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].strip()
        elif current == group and "=" in line and not line.startswith(("#", ";")):
            name, _, value = line.partition("=")
            found[name.strip()] = value.strip()
    return found


def _load_reference(value: str) -> Any:
    """The object ``module[:attr]`` names (as an entry point loads it)."""
    module, _, attr = value.partition(":")
    loaded = importlib.import_module(module.strip())
    for part in filter(None, attr.strip().split(".")):
        loaded = getattr(loaded, part)
    return loaded


def _entry_points(own: set[tuple[str, str]]) -> list[metadata.EntryPoint]:
    """Every distribution's entry points of the ``gem`` group, each once, ``own`` first."""
    from importlib import metadata

    unique: dict[tuple[str, str], metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        unique.setdefault((ep.name, ep.value), ep)
    return sorted(unique.values(), key=lambda ep: ((ep.name, ep.value) not in own, ep.name))


def _own_origin(value: str) -> Any:
    """The origin of one of this distribution's plugins, read when first asked."""
    def origin() -> str:
        from importlib import metadata

        try:
            version = metadata.version(OWN_DISTRIBUTION)
        except metadata.PackageNotFoundError:
            version = "(not installed)"
        return f"{OWN_DISTRIBUTION} {version}, entry point {value}"

    return origin


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


def _call_register_hooks(manager: pluggy.PluginManager, plugins: set[str]) -> None:
    """Call the register hooks of ``plugins``, one plugin at a time, so one failure stays local."""
    for kind, kind_registry in registry.REGISTRIES.items():
        hook_name = f"gem_register_{kind}"
        for impl in getattr(manager.hook, hook_name).get_hookimpls():  # defaults, our packs, then others
            if impl.plugin_name in plugins:
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

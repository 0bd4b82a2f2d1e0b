"""The hooks a GEM plugin can implement.

A plugin is a module exposed through the ``gem`` entry-point group, for example in its
``pyproject.toml``::

    [project.entry-points.gem]
    mypack = "mypack.plugin"

with functions decorated by :data:`gem_core.hookimpl`. Each hook receives a ``register``
function; registrations name ``"module:attr"`` strings so that loading a plugin imports nothing
heavy.
"""

import pluggy

hookspec = pluggy.HookspecMarker("gem")
hookimpl = pluggy.HookimplMarker("gem")


@hookspec
def gem_register_envs(register):
    """Register environments: ``register(id, "module:Class", description=..., **defaults)``."""


@hookspec
def gem_register_wrappers(register):
    """Register wrappers: ``register(name, "module:factory", description=...)``."""


@hookspec
def gem_register_tools(register):
    """Register tools: ``register(name, "module:factory", description=...)``."""


@hookspec
def gem_register_estimators(register):
    """Register advantage estimators: ``register(name, "module:function", description=...)``."""


@hookspec
def gem_register_commands(register):
    """Register ``gem`` subcommands (``gem serve``, ``gem train``, an adapter's ``gem <lib>``):
    ``register(name, "module:click_command", description=...)``."""



@hookspec
def gem_register_exploits(register):
    """Register exploits for the reward-hacking probe (``gem check --hacks``):
    ``register(name, "module:function", description=...)``; ``function(context)`` returns the
    :class:`~gem_core.hacks.Attack` s to play against the environment in ``context`` (none when
    it does not apply)."""


@hookspec
def gem_register_keys(register):
    """Declare the files that hold a pack's answers and tests (answer keys, reference solutions,
    hidden tests): ``register(name, "package:relative/path" or [paths], description=...)``; paths
    may be folders and globs. Nothing is imported or read while registering (see
    :mod:`gem_core.keys`)."""

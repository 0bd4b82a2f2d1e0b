"""gem_core's own plugin: the wrappers, tools and advantage estimators that ship with the core.

It is registered through the same hooks as any third-party plugin, and always loads.
"""

from gem_core.hookspecs import hookimpl


@hookimpl
def gem_register_wrappers(register):
    pass


@hookimpl
def gem_register_tools(register):
    pass


@hookimpl
def gem_register_estimators(register):
    pass

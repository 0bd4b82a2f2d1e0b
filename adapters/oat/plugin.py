"""GEM plugin of the oat adapter: offers ``gem oat``."""

from gem_core import hookimpl


@hookimpl
def gem_register_commands(register):
    register("oat", "gem_adapters.oat.cli:oat",
             description="Print the oat command that trains on GEM environments.")

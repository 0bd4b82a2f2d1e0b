"""GEM plugin of the ROLL adapter: offers ``gem roll``."""

from gem_core import hookimpl


@hookimpl
def gem_register_commands(register):
    register("roll", "gem_adapters.roll.cli:roll",
             description="Write a ROLL config for GEM environments.")

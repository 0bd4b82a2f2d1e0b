"""GEM plugin of the verl adapter: offers ``gem verl``."""

from gem_core import hookimpl


@hookimpl
def gem_register_commands(register):
    register("verl", "gem_adapters.verl.cli:verl",
             description="Write a verl config and dataset for GEM environments.")

"""GEM plugin of the RL2 adapter: offers ``gem rl2``."""

from gem_core import hookimpl


@hookimpl
def gem_register_commands(register):
    register("rl2", "gem_adapters.rl2.cli:rl2",
             description="Write RL2 datasets and an environment file for GEM environments.")

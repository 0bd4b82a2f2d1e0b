"""GEM plugin of the TRL adapter: offers ``gem trl``."""

from gem_core import hookimpl


@hookimpl
def gem_register_commands(register):
    register("trl", "gem_adapters.trl.cli:trl",
             description="Write TRL datasets and a GRPOTrainer config for GEM environments.")

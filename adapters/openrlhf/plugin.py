"""GEM plugin of the OpenRLHF adapter: offers ``gem openrlhf``."""

from gem_core import hookimpl


@hookimpl
def gem_register_commands(register):
    register("openrlhf", "gem_adapters.openrlhf.cli:openrlhf",
             description="Write an OpenRLHF prompt dataset and agent file for GEM environments.")

"""Registers the example pack with GEM."""

from gem_core import hookimpl


@hookimpl
def gem_register_envs(register):
    register(
        "example:ReverseWord-v0",
        "gem_example_pack.reverse:ReverseWordEnv",
        description="Spell a word backwards.",
        max_turns=3,
    )

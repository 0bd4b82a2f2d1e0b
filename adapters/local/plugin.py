"""Registers ``gem train`` and ``gem eval`` through the adapters hook."""

from gem_core import hookimpl


@hookimpl
def gem_register_commands(register):
    register("train", "gem_adapters.local.cli:train",
             description="Train a model on environments with multi-turn REINFORCE (ReBN by default), on one machine.")
    register("eval", "gem_adapters.local.cli:eval_command",
             description="Score a local model or an OpenAI-compatible endpoint on environments.")

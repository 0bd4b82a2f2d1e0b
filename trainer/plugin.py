"""Registers ``gem train``, ``gem eval`` and ``gem view`` through the commands hook."""

from gem_core import hookimpl


@hookimpl
def gem_register_commands(register):
    register("train", "gem_trainer.cli:train",
             description="Train a model on environments with multi-turn REINFORCE (ReBN by default), on one machine.")
    register("eval", "gem_trainer.cli:eval_command",
             description="Score a local model or an OpenAI-compatible endpoint on environments; compare two scorings.")
    register("view", "gem_trainer.cli:view",
             description="Write and open a page showing the episodes of an evaluation or training run.")

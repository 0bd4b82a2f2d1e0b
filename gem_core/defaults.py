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


ESTIMATORS = {
    "rebn": ("per_turn:rebn", "ReBN: per-turn returns normalised over the batch (mean 0, std 1)"),
    "reinforce": ("per_turn:reinforce", "vanilla REINFORCE: the discounted return G_t"),
    "reinforce_baseline": ("per_turn:reinforce_baseline", "G_t minus the batch mean of the returns"),
    "grpo": ("grouped:grpo", "trajectory return normalised within groups from one start state"),
    "drgrpo": ("grouped:drgrpo", "Dr. GRPO: trajectory return minus its group's mean"),
    "rloo": ("grouped:rloo", "trajectory return minus the mean of the rest of its group"),
}


@hookimpl
def gem_register_estimators(register):
    for name, (target, description) in ESTIMATORS.items():
        register(name, f"gem_core.estimators.{target}", description=description)

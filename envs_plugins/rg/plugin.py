"""Registers the ``rg`` pack: one id per reasoning-gym dataset (``rg:<dataset>``), and
``rg:composite`` to mix several with weights."""

from gem_core import hookimpl

from gem_envs.rg.catalog import MIX, dataset_categories

_ENV = "gem_envs.rg.env:ReasoningGymEnv"


@hookimpl
def gem_register_envs(register):
    for name, category in dataset_categories().items():
        if name == MIX:
            description = ("A weighted mix of reasoning-gym datasets: pass datasets={name: weight, ...}.")
        else:
            description = f"reasoning-gym {category} task {name!r}, scored by its own scorer."
        register(f"rg:{name}", _ENV, name=name, size=500, seed=42, description=description,
                 requires={"reasoning_gym": "envs"})

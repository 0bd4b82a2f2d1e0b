"""The ``rg`` pack: reasoning-gym's procedural tasks as single-turn environments (offline).

* :mod:`~gem_envs.rg.plugin`: registers the ids, from :mod:`~gem_envs.rg.catalog`, the shipped
  list of reasoning-gym's datasets.
* :mod:`~gem_envs.rg.env`: the environments.
* :mod:`~gem_envs.rg.datasets`: reasoning-gym's datasets, named and made with clear errors.
* :mod:`~gem_envs.rg.generation`: items made in a sandboxed worker (datasets that run programs);
  :mod:`~gem_envs.rg.program_worker` is the worker's side.
* :mod:`~gem_envs.rg.scoring`: reasoning-gym's scorers, run in scoring workers.
"""

"""GEM's built-in environment packs. Each subpackage is a plugin registered through the ``gem``
entry-point group, exactly as a third-party pack is.

* :mod:`~gem_envs.game`: multi-turn language games.
* :mod:`~gem_envs.math`: math problems, graded by math-verify.
* :mod:`~gem_envs.rg`: reasoning-gym's procedural tasks.
* :mod:`~gem_envs.code`: programs that must pass hidden tests.
* :mod:`~gem_envs.qa`: question answering, with search or without.
* :mod:`~gem_envs.terminal`: terminal tasks in a sandboxed shell, graded by hidden tests.
* :mod:`~gem_envs.multiagent`: games for several players, and a customer-service task.
* :mod:`~gem_envs.vision`: visual tasks.
* :mod:`~gem_envs.webshop`: WebShop, shopping in a simulated store.
* :mod:`~gem_envs.wikigame`: reaching a Wikipedia article by following links.

What several packs share, as any pack may use it:

* :mod:`~gem_envs.data`: the rows of dataset-backed environments, and their order.
* :mod:`~gem_envs.question`: single-turn question environments.
"""

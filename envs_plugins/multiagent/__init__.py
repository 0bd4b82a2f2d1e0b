"""The ``multiagent`` pack: turn-taking and simultaneous-move games for two or more players, and a
tool-using customer-service task with a scripted user (see docs/envs.md).

* :mod:`~gem_envs.multiagent.plugin`: registers the ids.
* :mod:`~gem_envs.multiagent.base`: what the games share.
* The games: :mod:`~gem_envs.multiagent.tictactoe`, :mod:`~gem_envs.multiagent.nim`,
  :mod:`~gem_envs.multiagent.kuhn_poker`, :mod:`~gem_envs.multiagent.liars_dice`,
  :mod:`~gem_envs.multiagent.prisoners_dilemma`.
* :mod:`~gem_envs.multiagent.customer_service`: the customer-service task, on the store of
  :mod:`~gem_envs.multiagent.retail_store`; :mod:`~gem_envs.multiagent.llm_user` has a model play
  the customer.
"""

"""``gem train``: multi-turn REINFORCE on a local model.

* :mod:`~gem_trainer.training.rollout`: seeds, groups, episodes to training samples;
* :mod:`~gem_trainer.training.agents`: episodes of agent programs through GEM's gateway (``--agent``);
* :mod:`~gem_trainer.training.loss`: the token-level loss over samples packed into rows;
* :mod:`~gem_trainer.training.memory`: the memory estimate made before a run, micro-batch sizes;
* :mod:`~gem_trainer.training.trainer`: the training loop;
* :mod:`~gem_trainer.training.checkpoint`: checkpoints written aside and swapped in.
"""

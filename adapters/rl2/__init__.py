"""GEM on RL2 (PyPI ``rl-square`` 0.0.2): an environment file for RL2's ``rollout.env_path`` that
plays GEM environments through RL2's own multi-turn rollout with per-turn rewards
(:mod:`~gem_adapters.rl2.rollout`), GEM's advantage estimators in place of RL2's
``compute_advantages`` (``torchrun ... -m gem_adapters.rl2.train <RL2 overrides>
gem.estimator=rebn``), and ``gem rl2 config``, which writes the datasets and the environment file
and prints that command. Install as docs/adapters/rl2.md says (RL2 itself goes in with ``--no-deps``)."""

#: RL2's trainer module: it imports ``compute_advantages`` by name from ``RL2.utils.algorithms``.
TRAINER_MODULE = "RL2.trainer.ppo"

"""GEM on TRL (``trl`` 1.16): GRPOTrainer's ``rollout_func`` plays GEM episodes turn by turn
through TRL's own generation (:mod:`~gem_adapters.trl.rollout`), GEM's advantage estimators
replace TRL's group advantage (:mod:`~gem_adapters.trl.advantages`, :mod:`~gem_adapters.trl.trainer`),
and ``gem trl config`` writes the datasets and a TRL config for ``python -m gem_adapters.trl.train``
(:mod:`~gem_adapters.trl.config`). Install with ``pip install "gem-adapters[trl]"`` after torch."""

#: The ``--estimator`` value that keeps TRL's own group advantage (the episode's return
#: normalised within its group of ``num_generations``), unchanged.
TRL_ESTIMATOR = "trl"

"""Sampling responses from a local model.

* :mod:`~gem_trainer.decoding.sampling`: :class:`LocalPolicy`, responses for a batch of prompts;
* :mod:`~gem_trainer.decoding.cached_decoder`: batched decoding in a key/value buffer of fixed shape;
* :mod:`~gem_trainer.decoding.cuda_graphs`: a decoding step captured as a CUDA graph;
* :mod:`~gem_trainer.decoding.prefix_cache`: keys and values of prefixes already read, kept between turns.
"""

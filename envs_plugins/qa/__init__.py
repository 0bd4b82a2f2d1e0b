"""The ``qa`` pack: answer questions, optionally searching a corpus first.

* :mod:`~gem_envs.qa.plugin`: registers the ids.
* :mod:`~gem_envs.qa.env`: question answering over a dataset.
* :mod:`~gem_envs.qa.answers`: the answer in what an LLM wrote, and exact-match scoring.
* :mod:`~gem_envs.qa.almanac`: an invented archipelago's encyclopedia and questions, offline.
"""

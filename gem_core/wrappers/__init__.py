"""Wrappers that ship with GEM, and wrapper chains given by name.

Registered names (``gem_core.get_wrapper(name)``): ``concat``, ``concat_with_action``,
``concat_chat``, ``concat_chat_on_reset`` (:class:`HistoryWrapper`) and ``episode_tracking``;
``rubric`` and ``judge`` live in :mod:`gem_core.rubrics`.

* :mod:`~gem_core.wrappers.observation`: the history renderers, :class:`HistoryWrapper`.
* :mod:`~gem_core.wrappers.episode_tracking`: the running episode's turn count and return in ``info``.
* :mod:`~gem_core.wrappers.chain`: wrapper chains as configs give them (:func:`wrap`).
* :mod:`~gem_core.wrappers.seats`: single-agent views of multi-agent environments (``self_play``,
  ``versus``).
"""

from gem_core.core import ResultWrapper
from gem_core.wrappers.chain import chain_factory, parse_wrappers, wrap, wrapper_option_names
from gem_core.wrappers.episode_tracking import EpisodeTrackingWrapper
from gem_core.wrappers.observation import FORMATS, HistoryWrapper

__all__ = [
    "FORMATS",
    "EpisodeTrackingWrapper",
    "HistoryWrapper",
    "ResultWrapper",
    "chain_factory",
    "parse_wrappers",
    "wrap",
    "wrapper_option_names",
]

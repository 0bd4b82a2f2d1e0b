"""Wrappers that ship with GEM, and wrapper chains given by name.

Registered names (``gem_core.get_wrapper(name)``): ``concat``, ``concat_with_action``,
``concat_chat``, ``concat_chat_on_reset`` (:class:`HistoryWrapper`, see
:mod:`gem_core.wrappers.observation`) and
``episode_tracking`` (see :mod:`gem_core.wrappers.episode_tracking`); ``rubric`` and ``judge`` live
in :mod:`gem_core.rubrics`.
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

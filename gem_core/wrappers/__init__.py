"""Wrappers that ship with GEM, and wrapper chains given by name.

Registered names (``gem_core.get_wrapper(name)``): ``concat``, ``concat_with_action``,
``concat_chat``, ``concat_chat_on_reset`` (see :mod:`gem_core.wrappers.observation`) and
``episode_tracking`` (see :mod:`gem_core.wrappers.episode_tracking`).
"""

from gem_core.wrappers.base import ResultWrapper
from gem_core.wrappers.chain import chain_factory, parse_wrappers, wrap, wrapper_option_names
from gem_core.wrappers.episode_tracking import EpisodeTrackingWrapper
from gem_core.wrappers.observation import FORMATS, ObservationWrapper

__all__ = [
    "FORMATS",
    "EpisodeTrackingWrapper",
    "ObservationWrapper",
    "ResultWrapper",
    "chain_factory",
    "parse_wrappers",
    "wrap",
    "wrapper_option_names",
]

"""Kept importable here: :class:`ResultWrapper` lives in :mod:`gem_core.core` next to
:class:`~gem_core.core.Wrapper` (``gem_core.ResultWrapper``)."""

from gem_core.core import ResultWrapper

__all__ = ["ResultWrapper"]

"""Import stand-ins for GPU-only modules that a library imports at module level but the tested
paths never call. Each stand-in has a real ``__spec__`` (transformers looks modules up with
``importlib.util.find_spec``) and any name taken from it is a function that raises, so a tested
path that did call one would fail loudly. A real package of the same name, if installed, is left
in place."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Iterable


class StandIn(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)

        def unavailable(*args, **kwargs):
            raise RuntimeError(f"{self.__name__}.{name} is an import stand-in: the tested path must not call it")

        unavailable.__name__ = name
        return unavailable


def install(modules: Iterable[str]) -> list[str]:
    """Put stand-ins for ``modules`` (parents before children) into ``sys.modules``; returns the
    names stood in for."""
    installed = []
    for name in modules:
        top = name.split(".")[0]
        if top not in sys.modules and importlib.util.find_spec(top) is not None:
            continue  # the real package is installed
        if name in sys.modules:
            continue
        module = StandIn(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, loader=None, is_package=True)
        module.__path__ = []
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)
        installed.append(name)
    return installed

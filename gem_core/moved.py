"""Old import paths kept working for one release after a module or package moves.

An old module file calls :func:`alias_module`; the old name then *is* the new module object, so
classes keep their identity and patching either name patches both. An old package calls
:func:`alias_package`, which does the same for the package and every module below it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from importlib.machinery import ModuleSpec
from types import ModuleType


def alias_module(old: str, new: str) -> None:
    """Make the module being imported as ``old`` the module ``new``, with a DeprecationWarning."""
    warnings.warn(f"{old} moved to {new}", DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)


def alias_package(old: str, new: str) -> None:
    """Make the package being imported as ``old`` the package ``new``, and each ``old.X`` below it
    the module ``new.X`` (imported on first use), with one DeprecationWarning for the package."""
    warnings.warn(f"{old} moved to {new}", DeprecationWarning, stacklevel=3)
    if not any(isinstance(f, _PackageAlias) and f.old == old for f in sys.meta_path):
        # First: the old package's __path__ is the new one's, where the path finder would load a
        # second copy of each module under its old name.
        sys.meta_path.insert(0, _PackageAlias(old, new))
    sys.modules[old] = importlib.import_module(new)


class _PackageAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``old.X`` as the already imported (or now imported) module ``new.X``."""

    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def new_name(self, name: str) -> str:
        return self.new + name[len(self.old):]

    def find_spec(self, name: str, path=None, target=None) -> ModuleSpec | None:
        if not name.startswith(self.old + "."):
            return None
        found = importlib.util.find_spec(self.new_name(name))
        if found is None:
            return None
        return importlib.util.spec_from_loader(name, self, origin=found.origin,
                                               is_package=found.submodule_search_locations is not None)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.new_name(spec.name))
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system has just set the module's __spec__ to the old name's: give it back its own.
        module.__spec__ = module.__spec__.loader_state

    def get_code(self, name: str):
        """The new module's code, for ``python -m old.X``."""
        spec = importlib.util.find_spec(self.new_name(name))
        return spec.loader.get_code(spec.name)

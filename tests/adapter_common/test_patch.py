"""The one way adapters put GEM's function in place of a library's and give the library's back."""

from __future__ import annotations

import types

import pytest

from gem_adapters.common import patch


def library() -> types.SimpleNamespace:
    class Maker:
        def advantages(self):
            return "library"

    return types.SimpleNamespace(Maker=Maker, module=types.ModuleType("library_module"))


def gem_function(estimator):
    def advantages(self=None):
        return estimator

    advantages.gem_estimator = estimator
    return advantages


def test_install_twice_then_uninstall_gives_the_library_its_own_back():
    lib = library()
    own = lib.Maker.advantages
    lib.module.advantages = own
    owners = [lib.Maker, lib.module]
    assert patch.installed(lib.Maker, "advantages") is None
    patch.install(owners, "advantages", gem_function("rebn"))
    patch.install(owners, "advantages", gem_function("grpo"))
    assert lib.Maker().advantages() == "grpo" and lib.module.advantages() == "grpo"
    assert patch.installed(lib.Maker, "advantages") == "grpo"
    patch.uninstall(owners, "advantages")
    assert lib.Maker.advantages is own and lib.module.advantages is own
    assert lib.Maker().advantages() == "library" and patch.installed(lib.module, "advantages") is None
    patch.uninstall(owners, "advantages")  # nothing replaced: nothing changes
    assert lib.Maker.advantages is own


def test_replaced_puts_the_library_function_back_when_the_block_fails():
    lib = library()
    own = lib.Maker.advantages
    with pytest.raises(RuntimeError), patch.replaced(lib.Maker, "advantages", gem_function("rebn")):
        assert lib.Maker().advantages() == "rebn"
        raise RuntimeError("the library's run failed")
    assert lib.Maker.advantages is own and not hasattr(lib.Maker, patch.SAVED.format("advantages"))

"""Deprecated: moved to :mod:`gem_adapters.oat.rollout`; this name stays for one release."""

from gem_core.moved import alias_module

alias_module(__name__, "gem_adapters.oat.rollout")

"""Deprecated: moved to :mod:`gem_adapters.openrlhf.advantages`; this name stays for one release."""

from gem_core.moved import alias_module

alias_module(__name__, "gem_adapters.openrlhf.advantages")

"""Deprecated: the built-in trainer moved to :mod:`gem_trainer`; this name stays for one release."""

from gem_core.moved import alias_package

alias_package(__name__, "gem_trainer")

"""Deprecated: moved to :mod:`gem_core.sandbox.warm_pool`; this name stays for one release."""

import sys
import warnings

from gem_core.sandbox import warm_pool as _moved

warnings.warn("gem_core.tools.warm_pool moved to gem_core.sandbox.warm_pool", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved  # the same module object, so patching either name patches both

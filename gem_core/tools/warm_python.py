"""Deprecated: moved to :mod:`gem_core.sandbox.warm_python`; this name stays for one release."""

import sys
import warnings

from gem_core.sandbox import warm_python as _moved

warnings.warn("gem_core.tools.warm_python moved to gem_core.sandbox.warm_python", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved  # the same module object, so patching either name patches both

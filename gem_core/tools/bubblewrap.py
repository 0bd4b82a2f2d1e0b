"""Deprecated: moved to :mod:`gem_core.sandbox.bubblewrap`; this name stays for one release."""

import sys
import warnings

from gem_core.sandbox import bubblewrap as _moved

warnings.warn("gem_core.tools.bubblewrap moved to gem_core.sandbox.bubblewrap", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved  # the same module object, so patching either name patches both

"""The bubblewrap sandbox shared by the Python tool and the code and terminal environments.

>>> from gem_core.sandbox import run_python
>>> run_python("print(6 * 7)").stdout
'42\\n'

:mod:`~gem_core.sandbox.bubblewrap` builds the bwrap command line (namespaces, mounts, the
unprivileged user); :mod:`~gem_core.sandbox.python` runs a Python program in a sandbox with limits
and a timeout (:func:`run_python`); :mod:`~gem_core.sandbox.warm_pool` lends sandboxes kept warm
between jobs, and :mod:`~gem_core.sandbox.warm_python` is the warm Python interpreter that
:func:`run_python` uses by default.
"""

from gem_core.sandbox.bubblewrap import SandboxConfigError, SandboxError, SandboxUnavailableError
from gem_core.sandbox.python import Limits, PythonResult, arun_python, run_python, sandbox_problem

__all__ = [
    "Limits",
    "PythonResult",
    "SandboxConfigError",
    "SandboxError",
    "SandboxUnavailableError",
    "arun_python",
    "run_python",
    "sandbox_problem",
]

"""Sandboxes for untrusted code, shared by the Python tool, the code and terminal environments and
the scoring of answers.

>>> from gem_core.sandbox import run_python
>>> run_python("print(6 * 7)").stdout
'42\\n'

* :mod:`~gem_core.sandbox.bubblewrap`: the bwrap command line (namespaces, mounts, the
  unprivileged user), the one sandbox policy.
* :mod:`~gem_core.sandbox.view`: what a Python sandbox shows of its interpreter: the standard
  library and the packages the code may use, nothing else installed;
  :mod:`~gem_core.sandbox.packages_probe` finds their files, run in that interpreter.
* :mod:`~gem_core.sandbox.python`: a Python program in a sandbox, with limits and a timeout
  (:func:`run_python`).
* :mod:`~gem_core.sandbox.warm_pool`: lending sandboxes kept warm between jobs.
* :mod:`~gem_core.sandbox.warm_python`: the warm Python interpreter :func:`run_python` uses by
  default.
* :mod:`~gem_core.sandbox.worker_pool`: time-limited, sandboxed worker processes that score
  answers; :mod:`~gem_core.sandbox.worker` is their side.
* :mod:`~gem_core.sandbox.threads`: the thread pool that runs blocking calls for async callers.
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

"""Tools for agents: sandboxed Python execution.

>>> from gem_core.tools import run_python
>>> run_python("print(6 * 7)").stdout
'42\\n'
"""

from gem_core.tools.base import Tool, ToolCall, ToolConfigError, ToolOutput
from gem_core.tools.sandbox import (
    PythonResult,
    SandboxConfigError,
    SandboxError,
    SandboxUnavailableError,
    arun_python,
    run_python,
    sandbox_problem,
)

__all__ = [
    "PythonResult",
    "SandboxConfigError",
    "SandboxError",
    "SandboxUnavailableError",
    "Tool",
    "ToolCall",
    "ToolConfigError",
    "ToolOutput",
    "arun_python",
    "run_python",
    "sandbox_problem",
]

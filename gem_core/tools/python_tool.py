"""The Python tool: runs code the model writes in ``<python>...</python>`` or a fenced
```` ```python ```` block, in the sandbox of :func:`gem_core.tools.run_python`."""

from __future__ import annotations

import re
import signal
import sys
import textwrap
from collections.abc import Mapping
from typing import Any

from gem_core.tools.base import (Tool, ToolCall, ToolConfigError, ToolFunction, ToolOutput, find_block,
                                 string_argument, text_function)
from gem_core.sandbox import PythonResult, SandboxUnavailableError, run_python, sandbox_problem
from gem_core.sandbox.bubblewrap import interpreter
from gem_core.sandbox.view import package_view

_FENCE_OPENER = re.compile(r"```[ \t]*(?:python3?|py)(?![\w.+-])[ \t]*\n?", re.IGNORECASE)
_SIGNAL_NOTES = {
    signal.SIGXCPU: "CPU time limit exceeded",
    signal.SIGKILL: "killed",
    signal.SIGSEGV: "segmentation fault",
    signal.SIGABRT: "aborted",
}
_SANDBOX_OPTIONS = ("memory_mb", "cpu_seconds", "max_processes", "max_file_mb", "tmp_mb", "max_output", "python",
                    "packages")


class PythonTool(Tool):
    """Runs Python code from the model's action and returns what it printed.

    Args:
        timeout: wall-clock seconds per call (really enforced).
        keep_error_last_line: show only the last line of stderr (e.g. ``NameError: ...``).
        allow_unsandboxed: run without isolation where bubblewrap is unavailable (see
            :func:`~gem_core.tools.run_python`); otherwise such a machine raises at construction.
        **sandbox_options: ``memory_mb``, ``cpu_seconds``, ``max_processes``, ``max_file_mb``,
            ``tmp_mb``, ``max_output``, ``python``, and ``packages``: the installed distributions
            the code may import beside the standard library (default: those of numpy, scipy,
            sympy, pandas, networkx and sortedcontainers that are installed); nothing else
            installed is visible to it (see :func:`~gem_core.tools.run_python`).

    The observation is ``"Code execution result: "`` followed by stdout, then stderr, then a note
    when the program timed out or was killed. A call succeeds when the program exits with status 0
    within its time. A package in ``packages`` that is not installed raises
    :class:`~gem_core.sandbox.SandboxConfigError` here, not at the first call.
    """

    name = "python"
    tool_type = "python_code"
    blocking = True

    def __init__(self, *, timeout: float = 5.0, keep_error_last_line: bool = False,
                 allow_unsandboxed: bool = False, **sandbox_options: Any):
        if "sandbox_type" in sandbox_options:
            raise ToolConfigError("sandbox_type (gem-llm's) has no meaning here: code always runs in a "
                                  "bubblewrap sandbox. Remove it; allow_unsandboxed=True runs without one "
                                  "where bubblewrap is missing.")
        unknown = set(sandbox_options) - set(_SANDBOX_OPTIONS)
        if unknown:
            raise ToolConfigError(f"PythonTool does not accept {', '.join(sorted(unknown))}. "
                                  f"Accepted: timeout, keep_error_last_line, allow_unsandboxed, "
                                  f"{', '.join(_SANDBOX_OPTIONS)}.")
        self.timeout = timeout
        self.keep_error_last_line = keep_error_last_line
        self.allow_unsandboxed = allow_unsandboxed
        self.sandbox_options = sandbox_options
        package_view(interpreter(sandbox_options.get("python") or sys.executable), sandbox_options.get("packages"))
        if not allow_unsandboxed:
            problem = sandbox_problem(sandbox_options.get("python"))
            if problem is not None:
                raise SandboxUnavailableError(problem)

    def instructions(self) -> str:
        return (
            "You can run Python code to help you. Write a complete program (with its imports) inside "
            "<python>...</python> tags or a ```python code block. It runs in a fresh sandbox without "
            f"network access for at most {self.timeout:g} seconds, and what it prints comes back to "
            'you after "Code execution result:". Print the values you need to see.'
        )

    def functions(self) -> list[ToolFunction]:
        return [text_function(self.name, "Run a complete Python program (with its imports) in a fresh sandbox "
                              f"without network access, for at most {self.timeout:g} seconds; returns what it prints.",
                              "code", "The program")]

    def call_text(self, function: str, arguments: Mapping[str, Any]) -> str:
        if function != self.name:
            return super().call_text(function, arguments)
        return f"<python>\n{string_argument(function, arguments, 'code', '</python>')}\n</python>"

    def parse(self, action: str) -> ToolCall | None:
        candidates = []
        tagged = find_block(action, "<python>", "</python>")
        if tagged is not None:
            candidates.append(tagged)
        opener = _FENCE_OPENER.search(action)
        if opener is not None:
            close = action.find("```", opener.end())
            if close >= 0:
                candidates.append((opener.start(), close + 3, action[opener.end():close]))
        if not candidates:
            return None
        start, end, code = min(candidates)
        return ToolCall(self.name, textwrap.dedent(code).strip(), start, end)

    def execute(self, call: ToolCall) -> ToolOutput:
        if call.error is not None:
            return self.failed_call(call)
        result = run_python(call.arguments, timeout=self.timeout, allow_unsandboxed=self.allow_unsandboxed,
                            **self.sandbox_options)
        return self.output(result)

    def output(self, result: PythonResult) -> ToolOutput:
        """The observation and details for a finished program."""
        stderr = result.stderr.strip()
        if stderr and self.keep_error_last_line:
            stderr = stderr.splitlines()[-1]
        text = f"{result.stdout}\n{stderr}" if stderr else result.stdout
        note = _note(result, self.timeout)
        if note:
            text = f"{text.rstrip()}\n{note}" if text.strip() else note
        info = {"exit_code": result.exit_code, "timed_out": result.timed_out, "sandboxed": result.sandboxed,
                "truncated": result.truncated, "duration": result.duration}
        return ToolOutput("Code execution result: " + text.lstrip(" \n") + "\n", result.ok, info)


def _note(result: PythonResult, timeout: float) -> str:
    if result.timed_out:
        return f"Execution timed out after {timeout:g} seconds."
    sig = result.signal
    if sig is not None:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        reason = _SIGNAL_NOTES.get(sig)
        return f"Process killed by {name}" + (f" ({reason})." if reason else ".")
    return ""

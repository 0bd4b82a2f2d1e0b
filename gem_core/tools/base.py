"""The tool interface.

A tool tells the model how to call it (:meth:`Tool.instructions`), finds a call in whatever the
model wrote (:meth:`Tool.parse`), runs it (:meth:`Tool.execute`, or :meth:`Tool.aexecute` from
async code) and answers with an observation for the model (:class:`ToolOutput`).

For agents that call tools by name (MCP, function calling), a tool also lists its calls as
functions (:meth:`Tool.functions`) and writes the action text of a call (:meth:`Tool.call_text`),
so that calling a function and writing its text are the same step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gem_core.errors import GemError
from gem_core.sandbox.threads import tool_threads


class ToolConfigError(GemError, ValueError):
    """A tool configured with missing or invalid options."""


class ToolArgumentError(GemError, ValueError):
    """A function call (:meth:`Tool.call_text`) with a name or arguments the tool cannot take."""


@dataclass(frozen=True)
class ToolFunction:
    """One of a tool's calls as a named function: what it does, and the JSON schema of its
    arguments (an object schema)."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """A call found in an action.

    ``arguments`` is what the tool needs to run it (code, a query, a tool name and its arguments).
    ``start`` and ``end`` locate the call in the action: when several tools find calls, the one
    that starts first runs, and ``action[:end]`` is the action up to the end of the call.
    ``error`` says why the call is malformed; such a call is not run, and its error goes back to
    the model as a failed tool use.
    """

    tool: str
    arguments: Any
    start: int
    end: int
    error: str | None = None


@dataclass(frozen=True)
class ToolOutput:
    """A tool's answer: the observation for the model, whether the call succeeded, and details
    for logs (exit codes, timings, ...)."""

    observation: str
    success: bool
    info: dict[str, Any] = field(default_factory=dict)


class Tool:
    """Base class of tools.

    Subclasses set :attr:`name` and implement :meth:`instructions`, :meth:`parse` and
    :meth:`execute`; those that wait on I/O keep :attr:`blocking` True, and may override
    :meth:`aexecute` with a native async version.
    """

    #: The name the model and the logs know the tool by.
    name: str = "tool"
    #: A coarse kind, reported in the wrapper's ``info["tool_type"]``.
    tool_type: str = "tool"
    #: True when :meth:`execute` waits on a process, a server or the network.
    blocking: bool = True

    def __init__(self, **options: Any):
        if "num_workers" in options:
            raise ToolConfigError("num_workers (gem-llm's BaseTool) has no meaning here: blocking tools run "
                                  "in a shared pool of worker threads. Remove it.")
        if options:
            raise ToolConfigError(f"Tool takes no options; got {', '.join(sorted(options))}.")

    def instructions(self) -> str:
        """How to call the tool, appended to the first observation of an episode."""
        raise NotImplementedError

    async def ainstructions(self) -> str:
        """Async :meth:`instructions`, for tools that must ask a server first."""
        return self.instructions()

    def parse(self, action: str) -> ToolCall | None:
        """The first call to this tool in ``action``, or None. Never raises on any string."""
        raise NotImplementedError

    def execute(self, call: ToolCall) -> ToolOutput:
        """Run ``call`` and answer. Failures of the call itself (an error in the code, a server
        that died) are answers with ``success=False``, not exceptions."""
        raise NotImplementedError

    async def aexecute(self, call: ToolCall) -> ToolOutput:
        """Async :meth:`execute`: inline for non-blocking tools, else in a worker thread."""
        if not self.blocking:
            return self.execute(call)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(tool_threads(), self.execute, call)

    def functions(self) -> list[ToolFunction]:
        """The tool's calls as named functions; none unless the tool says how to write them."""
        return []

    def call_text(self, function: str, arguments: Mapping[str, Any]) -> str:
        """The action text that calls ``function`` (one of :meth:`functions`) with ``arguments``,
        as :meth:`parse` reads it; :class:`ToolArgumentError` when they do not fit."""
        raise ToolArgumentError(f"{self.name!r} has no function {function!r}.")

    def failed_call(self, call: ToolCall) -> ToolOutput:
        """The answer to a malformed call (one with ``call.error``)."""
        return ToolOutput(f"\n[{self.name} call rejected: {call.error}]\n", False, {"error": call.error})

    def close(self) -> None:
        """Release processes and connections. Safe to call more than once."""

    def __deepcopy__(self, memo: dict) -> Tool:
        return self  # a tool is a shared resource, not episode state: copies of an env share it

    def __enter__(self) -> Tool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def text_function(name: str, description: str, argument: str, about: str) -> ToolFunction:
    """A function of one string argument, ``argument`` (described by ``about``)."""
    return ToolFunction(name, description, {"type": "object", "required": [argument], "additionalProperties": False,
                                            "properties": {argument: {"type": "string", "description": about}}})


def string_argument(function: str, arguments: Mapping[str, Any], name: str, closer: str) -> str:
    """The string argument ``name`` of a call to ``function``, checked to fit between the tags
    that end with ``closer``."""
    extra = set(arguments) - {name}
    if extra:
        raise ToolArgumentError(f"{function} takes one argument, {name!r}; got also {', '.join(sorted(extra))}.")
    value = arguments.get(name)
    if not isinstance(value, str):
        raise ToolArgumentError(f"{function} needs {name!r}: a string, got {type(value).__name__}.")
    if closer in value:
        raise ToolArgumentError(f"{function}'s {name!r} must not contain {closer!r}, which would end the call early.")
    return value


def find_block(action: str, opener: str, closer: str) -> tuple[int, int, str] | None:
    """The first complete ``opener ... closer`` block: ``(start, end, content)``, in linear time.

    When the first opener has no closer after it, no later opener does either, so the search
    stops there; adversarial inputs with many openers cannot make it quadratic.
    """
    start = action.find(opener)
    if start < 0:
        return None
    content_start = start + len(opener)
    close = action.find(closer, content_start)
    if close < 0:
        return None
    return start, close + len(closer), action[content_start:close]

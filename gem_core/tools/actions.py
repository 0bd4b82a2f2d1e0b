"""The functions an agent calls to play a served environment: ``step``, which sends an action as
written, and the functions of the environment's tool wrappers (the Python tool's ``python``,
search's ``search``, an MCP server's tools), each of which sends the action text that calls it
(:meth:`gem_core.tools.Tool.call_text`). Calling a function is therefore exactly the step its text
would be in-process: same observation, same reward.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gem_core.core import Env, wrapper_stack
from gem_core.tools.base import ToolArgumentError, ToolConfigError, ToolFunction, text_function
from gem_core.tools.wrapper import ToolWrapper

STEP = text_function("step", "Take your turn: send ACTION as the environment's next action, exactly as you "
                            "would write it. Returns the next observation, the reward and whether the episode is done.",
                     "action", "Your action")


def tool_wrappers(env: Env) -> list[ToolWrapper]:
    """The tool wrappers in ``env``'s stack, outermost first."""
    return [layer for layer in wrapper_stack(env) if isinstance(layer, ToolWrapper)]


def functions(env: Env) -> list[ToolFunction]:
    """``step`` and every function of ``env``'s tool wrappers (may ask an MCP server: blocks)."""
    listed = [STEP]
    for wrapper in tool_wrappers(env):
        listed.extend(wrapper.functions())
    names = [function.name for function in listed]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ToolConfigError(f"Several tools of this environment are called {', '.join(map(repr, repeated))}.")
    return listed


def action_text(env: Env, function: str, arguments: Mapping[str, Any]) -> str:
    """The action that calls ``function`` with ``arguments``; :class:`ToolArgumentError` for an
    unknown function or arguments that do not fit it."""
    if function == STEP.name:
        extra = set(arguments) - {"action"}
        if extra or not isinstance(arguments.get("action"), str):
            raise ToolArgumentError(f"step takes one argument, 'action': a string; got {dict(arguments)!r:.200}.")
        return arguments["action"]
    for wrapper in tool_wrappers(env):
        if any(offered.name == function for offered in wrapper.functions()):
            return wrapper.call_text(function, arguments)
    known = ", ".join(f.name for f in functions(env))
    raise ToolArgumentError(f"Unknown tool {function!r}; this environment's tools are: {known}.")

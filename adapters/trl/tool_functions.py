"""GEM's tools as the functions TRL shows a model: a name, a description and typed parameters.

GEM's tool wrapper finds tool calls in the action text (``<python>...</python>``,
``<search>...</search>``, an MCP ``<tool_call>``). TRL's tool loop calls functions by name with
JSON arguments instead, and builds each function's schema from its signature and docstring. Each
:class:`ToolFunction` says how one GEM tool looks as a function and which action text its
arguments stand for, so that a call steps the environment with that text: GEM's wrapper then runs
the tool, counts it against the episode's tool budget and gives its reward, exactly as in-process.

* the Python tool is ``python(code: str)``; the search tool is ``search(query: str)``;
* an MCP tool keeps its server's name, description and parameters (JSON schema types become
  Python types; a tool whose parameters are not Python identifiers takes one ``arguments``
  object);
* any other tool is ``<name>(call: str)``, the call written as its instructions say.
"""

from __future__ import annotations

import inspect
import json
import keyword
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gem_core.core import Env, Wrapper
from gem_core.errors import GemError
from gem_core.tools.base import Tool
from gem_core.tools.mcp_tool import MCPTool
from gem_core.tools.python_tool import PythonTool
from gem_core.tools.search_tool import SearchTool
from gem_core.tools.wrapper import ToolWrapper

_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool,
                               "array": list, "object": dict}


@dataclass(frozen=True)
class Parameter:
    """One parameter of a tool function."""

    name: str
    hint: Any
    description: str
    required: bool = True


@dataclass(frozen=True)
class ToolFunction:
    """A GEM tool as a function: its name, description, parameters, and ``action(arguments)``,
    the action text that the GEM tool reads as this call."""

    name: str
    description: str
    parameters: tuple[Parameter, ...]
    action: Callable[[dict[str, Any]], str]


def tool_wrappers(env: Env) -> list[ToolWrapper]:
    """The tool wrappers around ``env``, outermost first."""
    found = []
    while isinstance(env, Wrapper):
        if isinstance(env, ToolWrapper):
            found.append(env)
        env = env.env
    return found


def tool_functions(env: Env) -> list[ToolFunction]:
    """The functions of every tool that ``env``'s tool wrappers offer."""
    return [function for wrapper in tool_wrappers(env) for tool in wrapper.tools for function in functions_of(tool)]


def functions_of(tool: Tool) -> list[ToolFunction]:
    """How ``tool`` looks as one or more functions; see the module documentation."""
    if isinstance(tool, PythonTool):
        return [ToolFunction(tool.name, "Run a Python program in a fresh sandbox without network access, for at most "
                                        f"{tool.timeout:g} seconds; what it prints comes back.",
                             (Parameter("code", str, "A complete program, with its imports; print the values you "
                                                     "need to see."),),
                             lambda arguments: f"<python>\n{arguments['code']}\n</python>")]
    if isinstance(tool, SearchTool):
        return [ToolFunction(tool.name, "Search the knowledge base; the top passages come back.",
                             (Parameter("query", str, "What to search for."),),
                             lambda arguments: f"<search>{arguments['query']}</search>")]
    if isinstance(tool, MCPTool):
        return [_mcp_function(schema) for schema in tool.function_schemas()]
    return [ToolFunction(tool.name, _one_line(tool.instructions()),
                         (Parameter("call", str, f"The call to {tool.name}, written as the description says."),),
                         lambda arguments: arguments["call"])]


def _mcp_function(schema: Mapping[str, Any]) -> ToolFunction:
    name = schema["name"]
    parameters = schema.get("parameters") or {}
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())

    whole_object = not all(_is_parameter_name(key) for key in properties)

    def action(arguments: dict[str, Any]) -> str:
        if whole_object:
            arguments = arguments["arguments"]
        call = {"name": name, "arguments": {key: value for key, value in arguments.items() if value is not None}}
        return f"<tool_call>{json.dumps(call)}</tool_call>"

    if whole_object:
        described = (Parameter("arguments", dict, f"The arguments, a JSON object following this schema: "
                                                  f"{json.dumps(parameters)}"),)
    else:
        described = tuple(
            Parameter(key, _hint(spec), _one_line(str(spec.get("description") or key)), key in required)
            for key, spec in properties.items())
    return ToolFunction(name, _one_line(schema.get("description") or f"The {name} tool."), described, action)


def _hint(spec: Any) -> Any:
    """The Python type of a JSON schema property, as transformers turns it back into a schema."""
    if not isinstance(spec, Mapping):
        return Any
    enum = spec.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, (str, int, float, bool)) for v in enum):
        return Literal[tuple(enum)]
    kind = spec.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind == "array" and isinstance(spec.get("items"), Mapping):
        item = _hint(spec["items"])
        return list if item is Any else list[item]
    return _JSON_TYPES.get(kind, Any)


def _is_parameter_name(name: Any) -> bool:
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name) and name != "self"


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def as_method(function: ToolFunction, run: Callable[[Any, str], str]) -> Callable[..., str]:
    """A method for an environment class: TRL reads its name, signature and docstring as the
    tool's schema; a call checks its arguments like a Python call (TRL shows the model the
    error) and returns ``run(self, action text)``."""
    reserved = {"reset", "get_reward"}
    if function.name in reserved or function.name.startswith("_") or not function.name.isidentifier():
        raise GemError(f"The tool {function.name!r} cannot be offered to TRL under that name (TRL reserves "
                       f"{', '.join(sorted(reserved))} and hides names starting with '_'); rename it.")
    signature = inspect.Signature([
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        *(inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, annotation=p.hint,
                            default=inspect.Parameter.empty if p.required else None)
          for p in function.parameters)])

    def method(self: Any, **arguments: Any) -> str:
        bound = signature.bind(self, **arguments)  # TypeError for a missing or unknown argument
        del bound.arguments["self"]
        for p in function.parameters:
            value = bound.arguments.get(p.name)
            if value is None and p.required:
                raise TypeError(f"{function.name}() argument {p.name!r} is required; it cannot be null")
            if p.hint in (str, dict) and value is not None and not isinstance(value, p.hint):
                raise TypeError(f"{function.name}() argument {p.name!r} must be "
                                f"{'a string' if p.hint is str else 'a JSON object'}, not {type(value).__name__}")
        return run(self, function.action(dict(bound.arguments)))

    method.__name__ = method.__qualname__ = function.name
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__annotations__ = {**{p.name: p.hint for p in function.parameters}, "return": str}
    method.__doc__ = docstring(function.description, [(p.name, p.description) for p in function.parameters])
    return method


def docstring(description: str, parameters: list[tuple[str, str]]) -> str:
    """A Google-style docstring, the form from which transformers reads a tool's schema."""
    lines = [description or "A tool.", ""]
    if parameters:
        lines.append("Args:")
        lines += [f"    {name}: {_one_line(text) or name}" for name, text in parameters]
    return "\n".join(lines)

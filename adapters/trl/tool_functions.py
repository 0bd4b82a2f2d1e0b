"""GEM's tool functions as the methods TRL shows a model: a name, a description and typed parameters.

GEM's tools say how their calls look as functions (:meth:`gem_core.tools.Tool.functions`: the
Python tool's ``python(code)``, search's ``search(query)``, an MCP server's tools with their JSON
schemas) and which action text a call stands for (:meth:`~gem_core.tools.Tool.call_text`). TRL's
tool loop calls methods by name with JSON arguments, and builds each one's schema from its
signature and Google-style docstring (transformers' ``get_json_schema``). :func:`as_method` makes
such a method of a :class:`~gem_core.tools.ToolFunction`: JSON schema types become Python types,
and a function whose parameter names are not Python identifiers takes one ``arguments`` object.
"""

from __future__ import annotations

import inspect
import json
import keyword
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gem_core.errors import GemError
from gem_core.tools.base import ToolFunction

_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool,
                               "array": list, "object": dict}
#: The one parameter of a function whose parameter names Python cannot take.
WHOLE_OBJECT = "arguments"


@dataclass(frozen=True)
class Parameter:
    """One parameter of a tool method."""

    name: str
    hint: Any
    description: str
    required: bool = True


def parameters_of(function: ToolFunction) -> tuple[Parameter, ...]:
    """The method parameters of ``function``'s JSON schema."""
    schema = function.parameters or {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    if not all(_is_parameter_name(key) for key in properties):
        return (Parameter(WHOLE_OBJECT, dict, f"The arguments, a JSON object following this schema: "
                                              f"{json.dumps(schema)}"),)
    return tuple(Parameter(key, _hint(spec), _one_line(str((spec or {}).get("description") or key)),
                           key in required) for key, spec in properties.items())


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


def as_method(function: ToolFunction, run: Callable[[Any, str, dict[str, Any]], str]) -> Callable[..., str]:
    """A method for an environment class: TRL reads its name, signature and docstring as the
    tool's schema; a call checks its arguments like a Python call (TRL shows the model the
    error) and returns ``run(self, function name, arguments)``."""
    reserved = {"reset", "get_reward"}
    if function.name in reserved or function.name.startswith("_") or not function.name.isidentifier():
        raise GemError(f"The tool {function.name!r} cannot be offered to TRL under that name (TRL reserves "
                       f"{', '.join(sorted(reserved))} and hides names starting with '_'); rename it.")
    parameters = parameters_of(function)
    whole_object = [p.name for p in parameters] == [WHOLE_OBJECT] and WHOLE_OBJECT not in (
        function.parameters.get("properties") or {})
    signature = inspect.Signature([
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        *(inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, annotation=p.hint,
                            default=inspect.Parameter.empty if p.required else None)
          for p in parameters)])

    def method(self: Any, **arguments: Any) -> str:
        bound = signature.bind(self, **arguments)  # TypeError for a missing or unknown argument
        del bound.arguments["self"]
        for p in parameters:
            value = bound.arguments.get(p.name)
            if value is None and p.required:
                raise TypeError(f"{function.name}() argument {p.name!r} is required; it cannot be null")
            if p.hint in (str, dict) and value is not None and not isinstance(value, p.hint):
                raise TypeError(f"{function.name}() argument {p.name!r} must be "
                                f"{'a string' if p.hint is str else 'a JSON object'}, not {type(value).__name__}")
        given = {key: value for key, value in bound.arguments.items() if value is not None}
        return run(self, function.name, given[WHOLE_OBJECT] if whole_object else given)

    method.__name__ = method.__qualname__ = function.name
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__annotations__ = {**{p.name: p.hint for p in parameters}, "return": str}
    method.__doc__ = docstring(_one_line(function.description) or f"The {function.name} tool.",
                               [(p.name, p.description) for p in parameters])
    return method


def docstring(description: str, parameters: list[tuple[str, str]]) -> str:
    """A Google-style docstring, the form from which transformers reads a tool's schema."""
    lines = [description, ""]
    if parameters:
        lines.append("Args:")
        lines += [f"    {name}: {_one_line(text) or name}" for name, text in parameters]
    return "\n".join(lines)

"""The tool wrapper: gives any environment's agent tools (Python, search, MCP, ...).

Each step, the wrapper looks for a tool call in the action. If one is found (and the episode's
tool budget is not spent), the tool runs and its answer is the next observation; the wrapped
environment does not see the action. Otherwise the action goes to the environment as usual.
"""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from gem_core.core import Env, ResetResult, StepResult, Wrapper
from gem_core.tools.base import Tool, ToolArgumentError, ToolCall, ToolConfigError, ToolFunction, ToolOutput

ToolSpec = str | tuple[str, Mapping[str, Any]] | Tool

BUDGET_SPENT = "You have used all your tool calls. Give your final answer now."

logger = logging.getLogger("gem_core.tools")


class ToolWrapper(Wrapper):
    """Lets the agent call tools before answering.

    Args:
        env: the environment to wrap.
        tools: registered tool names (``"python"``, ``"search"``, ``"mcp"``, or any a plugin
            registered), ``(name, options)`` pairs, or :class:`~gem_core.tools.Tool` instances.
        max_tool_uses: tool calls allowed per episode (None: unlimited). After the last one the
            observation tells the agent to answer, and further actions go to the environment.
        tool_reward: reward for every tool call.
        tool_success_reward: extra reward for every call that succeeds.
        add_instructions: append the tools' instructions to the first observation.

    The defaults (10 calls, no reward) are those of the reference's wrapper class; its presets,
    registered here under the same names, use 5 calls and these rewards: ``python_tool`` 0.05
    per call plus 0.25 per successful run, ``search_tool`` 0.3 per call, and the
    ``*_no_int_reward`` variants none.

    ``info`` keys: ``tool_use_counter``, ``tool_success_counter`` and ``tool_failure_counter``
    (calls this episode, all / succeeded / failed), ``use_tool`` (this step was a tool call);
    after a tool call also ``tool_name``, ``tool_type``, ``tool_success``, ``parsed_action`` (the
    action up to the end of the call) and ``tool_info`` (the tool's details); after ``reset``
    also ``prev_ep_tool_use_counter`` and ``prev_ep_tool_success_counter``.
    """

    def __init__(self, env: Env, tools: Sequence[ToolSpec] = ("python",), *, max_tool_uses: int | None = 10,
                 tool_reward: float = 0.0, tool_success_reward: float = 0.0, add_instructions: bool = True):
        super().__init__(env)
        if isinstance(tools, (str, Tool)) or (isinstance(tools, tuple) and len(tools) == 2
                                              and isinstance(tools[1], Mapping)):
            tools = [tools]  # a single tool given on its own
        if max_tool_uses is not None and (not isinstance(max_tool_uses, int) or max_tool_uses < 0):
            raise ToolConfigError(f"max_tool_uses must be a non-negative integer or None, got {max_tool_uses!r}.")
        self.tools: list[Tool] = []
        self._owned: list[Tool] = []
        try:
            for spec in tools:
                tool = _make_tool(spec)
                self.tools.append(tool)
                if not isinstance(spec, Tool):
                    self._owned.append(tool)
        except BaseException:
            self._close_owned()
            raise
        if not self.tools:
            raise ToolConfigError("ToolWrapper needs at least one tool.")
        self.max_tool_uses = max_tool_uses
        self.tool_reward = float(tool_reward)
        self.tool_success_reward = float(tool_success_reward)
        self.add_instructions = add_instructions
        self.tool_uses = self.tool_successes = self.tool_failures = 0

    @property
    def blocking(self) -> bool:  # type: ignore[override]
        return self.env.blocking or any(tool.blocking for tool in self.tools)

    def reset(self, seed: int | None = None, **options: Any) -> ResetResult:
        observation, info = self.env.reset(seed, **options)
        if self.add_instructions:
            observation = f"{observation}\n{_join([tool.instructions() for tool in self.tools])}"
        return observation, self._start_episode(info)

    async def areset(self, seed: int | None = None, **options: Any) -> ResetResult:
        observation, info = await self.env.areset(seed, **options)
        if self.add_instructions:
            observation = f"{observation}\n{_join([await tool.ainstructions() for tool in self.tools])}"
        return observation, self._start_episode(info)

    def step(self, action: str, verbose: bool = False) -> StepResult:
        """A tool call runs the tool; any other action goes to the environment. ``verbose``
        (gem-llm's) logs the tool call and its result at INFO level."""
        found = self.find_call(action)
        if found is None:
            return self._after_env_step(self.env.step(action))
        tool, call = found
        result = tool.execute(call)
        if verbose:
            logger.info("Tool call %r -> %r", call, result)
        return self._after_tool_call(action, tool, call, result)

    async def astep(self, action: str) -> StepResult:
        found = self.find_call(action)
        if found is None:
            return self._after_env_step(await self.env.astep(action))
        tool, call = found
        return self._after_tool_call(action, tool, call, await tool.aexecute(call))

    def find_call(self, action: str) -> tuple[Tool, ToolCall] | None:
        """The tool call that runs for ``action``: the one that starts first, when the budget
        allows a call at all."""
        if not isinstance(action, str):
            return None
        if self.max_tool_uses is not None and self.tool_uses >= self.max_tool_uses:
            return None
        best: tuple[Tool, ToolCall] | None = None
        for tool in self.tools:
            call = tool.parse(action)
            if call is not None and (best is None or call.start < best[1].start):
                best = (tool, call)
        return best

    def functions(self) -> list[ToolFunction]:
        """Every tool's calls as named functions (:meth:`Tool.functions`), in the order of the tools."""
        return [function for _, function in self._functions()]

    def call_text(self, function: str, arguments: Mapping[str, Any]) -> str:
        """The action text that calls ``function`` with ``arguments`` (:meth:`Tool.call_text`);
        stepping with it runs that tool."""
        for tool, offered in self._functions():
            if offered.name == function:
                return tool.call_text(function, arguments)
        known = ", ".join(f.name for _, f in self._functions()) or "none"
        raise ToolArgumentError(f"No tool offers a function {function!r}; the functions are: {known}.")

    def _functions(self) -> list[tuple[Tool, ToolFunction]]:
        found: dict[str, tuple[Tool, ToolFunction]] = {}
        for tool in self.tools:
            for function in tool.functions():
                if function.name in found:
                    raise ToolConfigError(f"Two tools offer a function named {function.name!r} "
                                          f"({found[function.name][0]!r} and {tool!r}).")
                found[function.name] = (tool, function)
        return list(found.values())

    def clone(self) -> ToolWrapper:
        """A copy in the same state, over a clone of the environment; the tools are shared."""
        return self._twin(self.env.clone())

    def __deepcopy__(self, memo: dict) -> ToolWrapper:
        return self._twin(copy.deepcopy(self.env, memo))

    def _twin(self, env: Env) -> ToolWrapper:
        twin = copy.copy(self)
        twin.env = env
        twin.tools = list(self.tools)
        twin._owned = []  # the original closes the tools it made
        return twin

    def close(self) -> None:
        self._close_owned()
        self.env.close()

    # --- bookkeeping ------------------------------------------------------------------------

    def _start_episode(self, info: dict[str, Any]) -> dict[str, Any]:
        info = dict(info)
        info["prev_ep_tool_use_counter"] = self.tool_uses
        info["prev_ep_tool_success_counter"] = self.tool_successes
        self.tool_uses = self.tool_successes = self.tool_failures = 0
        info.update(self._counters(), use_tool=False)
        return info

    def _after_env_step(self, result: StepResult) -> StepResult:
        observation, reward, terminated, truncated, info = result
        info = dict(info)
        info.update(self._counters(), use_tool=False)
        return observation, reward, terminated, truncated, info

    def _after_tool_call(self, action: str, tool: Tool, call: ToolCall, output: ToolOutput) -> StepResult:
        self.tool_uses += 1
        if output.success:
            self.tool_successes += 1
        else:
            self.tool_failures += 1
        reward = self.tool_reward + (self.tool_success_reward if output.success else 0.0)
        observation = output.observation
        if self.max_tool_uses is not None and self.tool_uses >= self.max_tool_uses:
            observation = f"{observation}\n\n{BUDGET_SPENT}"
        info = {
            **self._counters(),
            "use_tool": True,
            "tool_name": tool.name,
            "tool_type": tool.tool_type,
            "tool_success": output.success,
            "parsed_action": action[: call.end],
            "tool_info": output.info,
        }
        return observation, reward, False, False, info

    def _counters(self) -> dict[str, int]:
        return {"tool_use_counter": self.tool_uses, "tool_success_counter": self.tool_successes,
                "tool_failure_counter": self.tool_failures}

    def _close_owned(self) -> None:
        owned, self._owned = self._owned, []
        for tool in owned:
            tool.close()


def _join(instructions: list[str]) -> str:
    text = "\n".join(instructions)
    return f"Available tools:\n{text}" if len(instructions) > 1 else text


def _make_tool(spec: ToolSpec) -> Tool:
    if isinstance(spec, Tool):
        return spec
    if isinstance(spec, str):
        name, options = spec, {}
    elif isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str) and isinstance(spec[1], Mapping):
        name, options = spec
    else:
        raise ToolConfigError(f"Invalid tool {spec!r}: give a registered tool name, a (name, options) pair or a "
                              "Tool instance.")
    from gem_core.registry import get_tool

    factory = get_tool(name)
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as e:
        raise ToolConfigError(f"Tool {name!r} does not accept these options ({e}). Its parameters: "
                              f"{_parameters(factory)}.") from None
    except ValueError:  # no signature to check against: let the factory judge
        pass
    tool = factory(**options)
    if not isinstance(tool, Tool):
        raise ToolConfigError(f"Tool {name!r} made a {type(tool).__name__}, not a gem_core.tools.Tool.")
    return tool


def _parameters(factory: Any) -> str:
    try:
        return ", ".join(str(p) for p in inspect.signature(factory).parameters.values()) or "(none)"
    except (TypeError, ValueError):
        return "(unknown)"


def _preset(name: str, tools: list[ToolSpec], **defaults: Any):
    def factory(env: Env, **overrides: Any) -> ToolWrapper:
        return ToolWrapper(env, tools=overrides.pop("tools", tools), **{**defaults, **overrides})

    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = f"The reference's ``{name}`` preset: tools={tools!r}, {defaults!r}; keywords override."
    return factory


python_tool = _preset("python_tool", [("python", {"timeout": 5})], tool_reward=0.05, tool_success_reward=0.25,
                      max_tool_uses=5)
python_tool_no_int_reward = _preset("python_tool_no_int_reward", [("python", {"timeout": 5})], tool_reward=0.0,
                                    tool_success_reward=0.0, max_tool_uses=5)
python_tool_no_int_reward_last_line_error = _preset(
    "python_tool_no_int_reward_last_line_error", [("python", {"timeout": 5, "keep_error_last_line": True})],
    tool_reward=0.0, tool_success_reward=0.0, max_tool_uses=5)
search_tool = _preset("search_tool", [("search", {"topk": 3, "timeout": 5})], tool_reward=0.3,
                      tool_success_reward=0.0, max_tool_uses=5)
search_tool_no_int_reward = _preset("search_tool_no_int_reward", [("search", {"topk": 3, "timeout": 5})],
                                    tool_reward=0.0, tool_success_reward=0.0, max_tool_uses=5)

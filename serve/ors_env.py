"""An ORS environment played as a GEM environment (``ors:<name>`` ids), through ors-sdk's client.

``make("ors:<name>", base_url="http://host:8080")`` plays environment ``<name>`` of the ORS server
at ``base_url`` (``gem serve --ors``, or any server of the Open Reward Standard). Each episode is
one ORS session:

* ``reset(seed)`` opens a session on task ``seed`` of ``split`` (modulo the split's number of
  tasks; without a seed, a task drawn from the environment's generator) and returns the task's
  prompt (its text blocks; image blocks go to ``info["images"]``). ``info`` also holds ``task``
  (the task spec), ``split``, ``index`` and ``tools`` (the session's tool names).
* ``step(action)`` calls a tool: with a single tool of one string argument (``gem serve``'s
  ``step``, or a server's ``answer``), the action is that argument as written; otherwise the action
  names the tool as ``<tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>`` (the MCP tool's
  format). The observation is the output's text, the reward its ``reward`` (0 when none),
  ``terminated`` its ``finished``, and ``info`` holds its ``metadata`` and the tool called.
  ``gem serve``'s truncation comes back as ``truncated`` (it travels in the metadata).
* An action that names no tool, or that the server refuses (an unknown tool, arguments that do not
  fit), is a format error: reward 0, the episode goes on, and the observation says what went wrong
  (``info["format_error"]``).

A server that cannot be reached, or that does not have the environment or the split, fails
construction with a clear error. A server that dies or stops answering mid-episode, or whose tool
fails, fails that ``reset`` or ``step`` with :class:`OrsEnvError` (an
:class:`~gem_core.errors.EnvironmentFailure`): a vector environment records the fault on that slot
and the episode ends failed; no call waits longer than ``timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from gem_core.core import Env, ResetResult, StepResult
from gem_core.errors import EnvironmentFailure, GemError
from gem_core.tools.base import find_block
from gem_core.tools.mcp_tool import read_call
from gem_core.vector.workers import BackgroundLoop

API_KEY_ENV = "ORS_API_KEY"  # ors-sdk's own variable

_LOOP = BackgroundLoop("gem-ors-client")  # every ORS environment's connections live on this loop


class OrsEnvError(EnvironmentFailure):
    """The ORS server could not be reached, did not answer in time, lost the session, or its tool
    failed: the episode ends failed."""


class OrsEnv(Env):
    """An environment of an ORS server; see the module documentation.

    ``name``: the environment's name on the server. ``base_url``: the server's address.
    ``split``: the split whose tasks the seeds index (default ``train``). ``api_key``: sent as ORS's
    ``X-API-Key``; by default the ``ORS_API_KEY`` environment variable. ``timeout``: seconds any
    call may take (a reset opens a session, which may set up a sandbox).
    """

    def __init__(self, name: str | None = None, *, base_url: str | None = None, split: str = "train",
                 api_key: str | None = None, timeout: float = 300.0):
        from gem_serve.ors_server import load_ors

        load_ors()
        if not name:
            raise GemError("An ORS environment needs its name: make('ors:NAME', base_url='http://HOST:PORT').")
        if not base_url or not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise GemError(f"ors:{name} needs the server's address: base_url='http://HOST:PORT', got {base_url!r}.")
        self.name, self.base_url, self.split = name, base_url.rstrip("/"), split
        self.api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV) or None
        self.timeout = float(timeout)
        self._client: Any = None
        self._environment: Any = None
        self._session: Any = None
        self._tools: dict[str, Any] = {}
        self._task_count = 0
        self.finished = True
        try:
            self._call(self._connect(), "connect to")
        except OrsEnvError as e:
            self.close()
            raise GemError(str(e)) from None

    # ---- the environment API ----------------------------------------------------------

    def reset(self, seed: int | None = None, **options: Any) -> ResetResult:
        super().reset(seed)
        return self._call(self._areset(self._index(seed), options), "open a session on")

    def step(self, action: str) -> StepResult:
        return self._call(self._astep(action), "call a tool of")

    async def areset(self, seed: int | None = None, **options: Any) -> ResetResult:
        super().reset(seed)
        return await self._acall(self._areset(self._index(seed), options), "open a session on")

    async def astep(self, action: str) -> StepResult:
        return await self._acall(self._astep(action), "call a tool of")

    def sample_random_action(self) -> str:
        tool = self._string_tool()
        if tool is not None:
            return self.action_rng.choice(["yes", "no", "0", "1", "42"])
        name = self.action_rng.choice(sorted(self._tools)) if self._tools else "tool"
        return "<tool_call>" + json.dumps({"name": name, "arguments": {}}) + "</tool_call>"

    def clone(self) -> Env:
        raise GemError("An ORS environment cannot be cloned: its state lives on the server. "
                       "Replay the episode from its seed instead.")

    def close(self) -> None:
        session, client, self._session, self._client = self._session, self._client, None, None
        if session is None and client is None:
            return
        try:
            _LOOP.run(self._aclose(session, client), 30)
        except Exception:  # noqa: BLE001 - the server is gone: nothing to close there
            pass

    # ---- the calls, on the shared loop -------------------------------------------------

    def _call(self, coroutine, what: str) -> Any:
        return _LOOP.run(self._bounded(coroutine, what))

    async def _acall(self, coroutine, what: str) -> Any:
        return await asyncio.wrap_future(_LOOP.submit(self._bounded(coroutine, what)))

    async def _bounded(self, coroutine, what: str) -> Any:
        import aiohttp

        try:
            return await asyncio.wait_for(coroutine, self.timeout)
        except (asyncio.TimeoutError, TimeoutError):
            raise OrsEnvError(f"ors:{self.name} at {self.base_url} did not answer within {self.timeout:g} s "
                              f"(trying to {what} it).") from None
        except (OrsEnvError, GemError):
            raise
        except aiohttp.ClientResponseError as e:
            hint = (f" (is {self.name!r} one of its environments? GET {self.base_url}/list_environments lists them)"
                    if e.status == 404 and what == "connect to" else "")
            raise OrsEnvError(f"Cannot {what} ors:{self.name} at {self.base_url}: HTTP {e.status}: {e.message}"
                              f"{hint}") from None
        except Exception as e:  # noqa: BLE001 - connection failures, lost sessions, failed tools
            raise OrsEnvError(f"Cannot {what} ors:{self.name} at {self.base_url}: {type(e).__name__}: {e}") from None

    async def _connect(self) -> None:
        from ors.client import AsyncORS

        self._client = AsyncORS(base_url=self.base_url, api_key=self.api_key)
        self._environment = self._client.environment(self.name)
        splits = await self._environment.list_splits()
        if self.split not in splits:
            raise GemError(f"ors:{self.name} has no split {self.split!r}; its splits are: {', '.join(splits)}.")
        self._task_count = await self._environment.num_tasks(self.split)
        if self._task_count < 1:
            raise GemError(f"ors:{self.name}'s split {self.split!r} has no tasks.")
        self._tools = {tool.name: tool for tool in await self._environment.list_tools()}

    def _index(self, seed: int | None) -> int:
        if seed is None:
            return int(self.np_random.integers(self._task_count))
        return int(seed) % self._task_count

    async def _areset(self, index: int, options: dict[str, Any]) -> ResetResult:
        if options:
            raise GemError(f"ors:{self.name} takes no reset options (got {', '.join(sorted(options))}): "
                           "an ORS task is chosen by its index, the seed.")
        old, self._session = self._session, None
        if old is not None:
            await _leave(old)
        task = await self._environment.get_task(self.split, index)
        session = self._environment.session(task=task)  # with the task, the server knows the environment
        await session.__aenter__()
        self._session, self.finished = session, False
        self._tools = {tool.name: tool for tool in await session.list_tools()}
        text, images = _text_and_images(await session.get_prompt())
        info: dict[str, Any] = {"task": dict(task.task_spec), "split": self.split, "index": index,
                                "tools": sorted(self._tools)}
        if images:
            info["images"] = images
        return text, info

    async def _astep(self, action: str) -> StepResult:
        from ors.client import ToolCallError

        if self._session is None or self.finished:
            raise GemError(f"ors:{self.name}: no episode in progress: reset first (also after an episode ends).")
        name, arguments, problem = self._tool_call(action)
        if problem is not None:
            return _format_error(problem, self._tools)
        try:
            output = await self._session.call_tool(name, arguments)
        except ToolCallError as e:  # the server refused the call: the agent's mistake
            return _format_error(str(e), self._tools, tool=name)
        metadata = dict(output.metadata or {})
        text, images = _text_and_images(output.blocks)
        self.finished = bool(output.finished)
        truncated = bool(metadata.get("truncated")) and self.finished
        terminated = self.finished and not truncated
        info: dict[str, Any] = {"tool": name, "metadata": metadata}
        if isinstance(metadata.get("info"), dict):  # gem serve: the served environment's own info
            info.update(metadata["info"])
        if images:
            info["images"] = images
        return text, float(output.reward or 0.0), terminated, truncated, info

    def _tool_call(self, action: str) -> tuple[str, dict[str, Any], str | None]:
        """(tool, arguments, problem) for ``action`` (see the module documentation)."""
        single = self._string_tool()
        if single is not None:
            return single[0], {single[1]: action}, None
        block = find_block(action, "<tool_call>", "</tool_call>")
        if block is None:
            return "", {}, "No tool call found."
        name, arguments, error = read_call(block[2])
        return name, arguments, error

    def _string_tool(self) -> tuple[str, str] | None:
        """(tool, argument) when the environment has one tool, of one string argument."""
        if len(self._tools) != 1:
            return None
        (tool,) = self._tools.values()
        schema = tool.input_schema or {}
        properties = schema.get("properties") or {}
        if len(properties) == 1:
            (argument, about), = properties.items()
            if isinstance(about, dict) and about.get("type") == "string":
                return tool.name, argument
        return None

    async def _aclose(self, session: Any, client: Any) -> None:
        if session is not None:
            await _leave(session)
        if client is not None:
            for http in client.environments._clients.values():  # ors-sdk's AsyncORS has no close()
                await http.close()


async def _leave(session: Any) -> None:
    try:
        await asyncio.wait_for(session.__aexit__(None, None, None), 30)
    except Exception:  # noqa: BLE001 - a session the server already lost
        pass


def _format_error(problem: str, tools: dict[str, Any], tool: str | None = None) -> StepResult:
    listing = ", ".join(sorted(tools)) or "none"
    text = (f"[invalid tool call: {problem}] Call one of this environment's tools ({listing}) with "
            '<tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>.')
    info: dict[str, Any] = {"format_error": True, "error": problem}
    if tool:
        info["tool"] = tool
    return text, 0.0, False, False, info


def _text_and_images(blocks: Any) -> tuple[str, list[Any]]:
    from gem_serve.protocol import image_from_url

    texts, images = [], []
    for block in blocks:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "image":
            images.append(image_from_url(f"data:{block.mimeType};base64,{block.data}"))
    return "\n".join(texts), images

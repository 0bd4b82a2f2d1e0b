"""Tools for agents: sandboxed Python, search, MCP servers, and the wrapper that hands them to
any environment.

>>> from gem_core.tools import run_python
>>> run_python("print(6 * 7)").stdout
'42\\n'

Registered tool names (``gem_core.get_tool``): ``python`` (:class:`PythonTool`), ``search``
(:class:`SearchTool`), ``mcp`` (:class:`MCPTool`). Registered wrappers: ``tool``
(:class:`ToolWrapper`) and the reference's presets ``python_tool``, ``python_tool_no_int_reward``,
``python_tool_no_int_reward_last_line_error``, ``search_tool``, ``search_tool_no_int_reward``.

* :mod:`~gem_core.tools.base`: the tool interface.
* :mod:`~gem_core.tools.wrapper`: the tool wrapper.
* :mod:`~gem_core.tools.python_tool`: the Python tool, in the sandbox of :func:`run_python`.
* :mod:`~gem_core.tools.search_tool`: the search tool; :mod:`~gem_core.tools.retrieval` its local
  BM25 index and retrieval client, :mod:`~gem_core.tools.search_server` a local retrieval server.
* :mod:`~gem_core.tools.mcp_tool`: the tools of Model Context Protocol servers.
* :mod:`~gem_core.tools.actions`: the functions an agent calls to play an environment (``step``
  and those of its tool wrappers) and the action text each call is: ``gem serve``'s MCP tools and
  TRL's factory path call environments through them.
"""

from gem_core.tools.base import Tool, ToolCall, ToolConfigError, ToolOutput
from gem_core.tools.mcp_tool import MCPTool
from gem_core.tools.python_tool import PythonTool
from gem_core.tools.retrieval import SAMPLE_CORPUS, Bm25Index, HttpRetriever, Passage, load_corpus
from gem_core.sandbox import (
    PythonResult,
    SandboxConfigError,
    SandboxError,
    SandboxUnavailableError,
    arun_python,
    run_python,
    sandbox_problem,
)
from gem_core.tools.search_tool import SearchTool
from gem_core.tools.wrapper import ToolWrapper

__all__ = [
    "SAMPLE_CORPUS",
    "Bm25Index",
    "HttpRetriever",
    "MCPTool",
    "Passage",
    "PythonResult",
    "PythonTool",
    "SandboxConfigError",
    "SandboxError",
    "SandboxUnavailableError",
    "SearchTool",
    "Tool",
    "ToolCall",
    "ToolConfigError",
    "ToolOutput",
    "ToolWrapper",
    "arun_python",
    "load_corpus",
    "run_python",
    "sandbox_problem",
]

"""gem_core's own plugin: the wrappers, tools and advantage estimators that ship with the core.

It is registered through the same hooks as any third-party plugin, and always loads.
"""

from gem_core.hookspecs import hookimpl


@hookimpl
def gem_register_wrappers(register):
    observation = "gem_core.wrappers.observation"
    register("concat", f"{observation}:concat",
             description="Every observation so far, one after another.")
    register("concat_with_action", f"{observation}:concat_with_action",
             description="Observations and actions so far, alternating.")
    register("concat_chat", f"{observation}:concat_chat",
             description="The episode so far as chat messages through a tokenizer's chat template "
                         "(option: tokenizer).")
    register("concat_chat_on_reset", f"{observation}:concat_chat_on_reset",
             description="The first observation through the chat template, then plain text "
                         "(option: tokenizer).")
    register("episode_tracking", "gem_core.wrappers.episode_tracking:EpisodeTrackingWrapper",
             description="Turn count and cumulative reward of the episode in info.")

    rubrics = "gem_core.rubrics.wrapper"
    register("rubric", f"{rubrics}:RubricWrapper",
             description="Rewards from a rubric: weighted functions of each turn or episode (option: rubric).")
    register("judge", f"{rubrics}:judge",
             description="An LLM judge scores each episode (or turn) against a written rubric "
                         "(options: rubric, model, base_url, scope, weight, fallback, ...).")

    seats = "gem_core.wrappers.seats"
    register("self_play", f"{seats}:self_play",
             description="One policy plays every seat of a multi-agent environment, in turn.")
    register("versus", f"{seats}:versus",
             description="The policy plays one seat of a multi-agent environment; given policies or its bots the others.")
    # The tool wrapper, and the reference's tool presets under their names.
    register("tool", "gem_core.tools.wrapper:ToolWrapper",
             description="Give the agent tools: tools=[names or (name, options)], max_tool_uses, rewards.")
    register("python_tool", "gem_core.tools.wrapper:python_tool",
             description="Python tool, 5 calls, reward 0.05 per call + 0.25 per successful run.")
    register("python_tool_no_int_reward", "gem_core.tools.wrapper:python_tool_no_int_reward",
             description="Python tool, 5 calls, no tool rewards.")
    register("python_tool_no_int_reward_last_line_error",
             "gem_core.tools.wrapper:python_tool_no_int_reward_last_line_error",
             description="Python tool showing only the last line of errors, 5 calls, no tool rewards.")
    register("search_tool", "gem_core.tools.wrapper:search_tool",
             description="Search tool (SEARCH_URL), 5 calls, reward 0.3 per call.")
    register("search_tool_no_int_reward", "gem_core.tools.wrapper:search_tool_no_int_reward",
             description="Search tool (SEARCH_URL), 5 calls, no tool rewards.")


@hookimpl
def gem_register_tools(register):
    register("python", "gem_core.tools.python_tool:PythonTool",
             description="Runs <python>...</python> code in a bubblewrap sandbox.")
    register("search", "gem_core.tools.search_tool:SearchTool",
             description="Answers <search>...</search> from a BM25 corpus or a retrieval server.")
    register("mcp", "gem_core.tools.mcp_tool:MCPTool",
             description="Calls the tools of MCP servers (stdio or streamable HTTP).")


ESTIMATORS = {
    "rebn": ("per_turn:rebn", "ReBN: per-turn returns normalised over the batch (mean 0, std 1)"),
    "reinforce": ("per_turn:reinforce", "vanilla REINFORCE: the discounted return G_t"),
    "reinforce_baseline": ("per_turn:reinforce_baseline", "G_t minus the batch mean of the returns"),
    "grpo": ("grouped:grpo", "trajectory return normalised within groups from one start state"),
    "drgrpo": ("grouped:drgrpo", "Dr. GRPO: trajectory return minus its group's mean"),
    "rloo": ("grouped:rloo", "trajectory return minus the mean of the rest of its group"),
}


@hookimpl
def gem_register_estimators(register):
    for name, (target, description) in ESTIMATORS.items():
        register(name, f"gem_core.estimators.{target}", description=description)


@hookimpl
def gem_register_exploits(register):
    register("generic", "gem_core.hacks:generic_exploits",
             description="Empty, enormous and repeated answers, many answers at once, the prompt echoed back, "
                         "malformed answer tags, tool-call floods.")
    register("read", "gem_core.reading:read_exploits",
             description="Read the answer: every pack's data, declared answer keys and data caches, through the "
                         "Python tool.")

"""The tool wrapper: tools on any environment, budgets, rewards, info keys, async concurrency, and
tools from plugins."""

from __future__ import annotations

import asyncio
import time

import pytest

import gem_core
from gem_core import UnknownNameError, get_wrapper, register
from gem_core.registry import apply_wrappers
from gem_core.registry import deregister
from gem_core.tools import SAMPLE_CORPUS, PythonTool, SearchTool, ToolConfigError, ToolWrapper
from tests.helpers import fake_distribution, run_python

ENV_ID = "game:GuessTheNumber-v0-easy"
SEARCH = ("search", {"corpus": str(SAMPLE_CORPUS), "topk": 1})
QUERY = "<search>capital of Australia</search>"


def make(*tools, **options) -> ToolWrapper:
    return apply_wrappers(gem_core.make(ENV_ID), [("tool", {"tools": list(tools) or [SEARCH], **options})])


def test_instructions_are_appended_on_reset_with_counters_in_info():
    env = make()
    observation, info = env.reset(seed=3)
    plain, _ = gem_core.make(ENV_ID).reset(seed=3)
    assert observation == f"{plain}\n{env.tools[0].instructions()}"
    assert info["tool_use_counter"] == info["tool_success_counter"] == info["tool_failure_counter"] == 0
    assert info["prev_ep_tool_use_counter"] == 0 and info["use_tool"] is False
    assert "turn" in info  # the environment's own keys are kept


def test_a_tool_call_is_answered_by_the_tool_and_hidden_from_the_environment():
    env = make(tool_reward=0.1, tool_success_reward=0.5)
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(f"I'll look it up. {QUERY} Then answer.")
    assert "Doc 1(Title: Canberra)" in observation
    assert reward == pytest.approx(0.6) and not terminated and not truncated
    assert info["use_tool"] and info["tool_name"] == "search" and info["tool_type"] == "search"
    assert info["tool_success"] and info["tool_info"] == {"passages": 1}
    assert info["parsed_action"] == f"I'll look it up. {QUERY}"
    assert (info["tool_use_counter"], info["tool_success_counter"], info["tool_failure_counter"]) == (1, 1, 0)
    # The environment saw nothing: its first real turn is still turn 1.
    observation, reward, terminated, truncated, info = env.step(r"\boxed{5}")
    assert observation.startswith("Turn 1:") and info["use_tool"] is False and info["tool_use_counter"] == 1


def test_failed_calls_count_as_failures_without_the_success_reward():
    env = make(tool_reward=0.1, tool_success_reward=0.5)
    env.reset(seed=0)
    _, reward, _, _, info = env.step("<search> </search>")
    assert reward == pytest.approx(0.1)
    assert not info["tool_success"] and info["tool_failure_counter"] == 1 and info["tool_success_counter"] == 0


def test_the_budget_ends_tool_use():
    env = make(max_tool_uses=2)
    env.reset(seed=0)
    first = env.step(QUERY)
    assert "used all your tool calls" not in first[0]
    second = env.step(QUERY)
    assert second[0].endswith("You have used all your tool calls. Give your final answer now.")
    observation, _, terminated, _, info = env.step(QUERY)  # over budget: goes to the environment
    assert not info["use_tool"] and info["tool_use_counter"] == 2
    assert observation.startswith("Turn 1:")
    _, info = env.reset(seed=1)
    assert info["prev_ep_tool_use_counter"] == 2 and info["prev_ep_tool_success_counter"] == 2
    assert info["tool_use_counter"] == 0
    assert env.step(QUERY)[4]["use_tool"]  # a new episode, a new budget


@pytest.mark.usefixtures("sandbox")
def test_the_call_that_starts_first_runs_and_instructions_are_headed():
    env = make(SEARCH, ("python", {"timeout": 3}))
    observation, _ = env.reset(seed=0)
    assert "Available tools:\nYou can search" in observation and "<python>" in observation
    info = env.step(f"<python>print(1)</python> {QUERY}")[4]
    assert info["tool_name"] == "python"
    info = env.step(f"{QUERY} <python>print(1)</python>")[4]
    assert info["tool_name"] == "search"


@pytest.mark.usefixtures("sandbox")
def test_python_tool_preset_uses_the_reference_rewards():
    env = get_wrapper("python_tool")(gem_core.make(ENV_ID))
    assert (env.max_tool_uses, env.tool_reward, env.tool_success_reward) == (5, 0.05, 0.25)
    assert isinstance(env.tools[0], PythonTool) and env.tools[0].timeout == 5
    env.reset(seed=0)
    assert env.step("<python>print(2**10)</python>")[1] == pytest.approx(0.30)
    assert env.step("<python>raise SystemExit(1)</python>")[1] == pytest.approx(0.05)
    last_line = get_wrapper("python_tool_no_int_reward_last_line_error")(gem_core.make(ENV_ID))
    assert last_line.tool_reward == 0 and last_line.tools[0].keep_error_last_line
    env.close()


def test_search_presets_need_a_server_or_a_corpus(monkeypatch):
    monkeypatch.delenv("SEARCH_URL", raising=False)
    with pytest.raises(ToolConfigError, match="SEARCH_URL"):
        get_wrapper("search_tool")(gem_core.make(ENV_ID))
    env = get_wrapper("search_tool")(gem_core.make(ENV_ID), tools=[SEARCH])
    env.reset(seed=0)
    assert env.step(QUERY)[1] == pytest.approx(0.3)


def test_usable_from_an_env_spec():
    register("testtools:Guess-v0+Tool", "gem_envs.game.guess_the_number:GuessTheNumberEnv",
             wrappers=[("tool", {"tools": [SEARCH], "max_tool_uses": 3})], source="tests")
    try:
        env = gem_core.make("testtools:Guess-v0+Tool")
        assert isinstance(env, ToolWrapper) and env.max_tool_uses == 3
        observation, _ = env.reset(seed=0)
        assert "<search>" in observation
        assert env.step(QUERY)[4]["use_tool"]
    finally:
        deregister("testtools:Guess-v0+Tool")


def test_clones_keep_their_own_counters_and_share_the_tools():
    env = make()
    env.reset(seed=5)
    env.step(QUERY)
    twin = env.clone()
    assert twin.tools[0] is env.tools[0] and twin.env is not env.env
    twin.step(QUERY)
    assert (env.tool_uses, twin.tool_uses) == (1, 2)
    assert env.step(r"\boxed{5}")[0] == twin.step(r"\boxed{5}")[0]  # same hidden number
    twin.close()
    assert env.step(QUERY)[4]["tool_success"]  # closing the clone left the tools working


def test_blocking_follows_the_tools():
    assert make().blocking is False  # in-process BM25
    assert make(("search", {"url": "http://127.0.0.1:9/retrieve"})).blocking is True


@pytest.mark.usefixtures("sandbox")
def test_async_steps_run_tool_calls_concurrently():
    tool = PythonTool(timeout=5)
    envs = [ToolWrapper(gem_core.make(ENV_ID), [tool]) for _ in range(4)]
    assert all(env.blocking for env in envs)

    async def main():
        await asyncio.gather(*[env.areset(seed=i) for i, env in enumerate(envs)])
        start = time.monotonic()
        results = await asyncio.gather(*[env.astep("<python>import time; time.sleep(1); print('ok')</python>")
                                         for env in envs])
        return results, time.monotonic() - start

    results, elapsed = asyncio.run(main())
    assert all(r[0] == "Code execution result: ok\n\n" and r[4]["tool_success"] for r in results)
    assert elapsed < 3.0  # four one-second programs side by side


def test_configuration_errors_are_clear():
    env = gem_core.make(ENV_ID)
    with pytest.raises(UnknownNameError, match="Did you mean: search"):
        ToolWrapper(env, ["serch"])
    with pytest.raises(ToolConfigError, match="does not accept"):
        ToolWrapper(env, [("search", {"corpus": str(SAMPLE_CORPUS), "top_k": 3})])
    with pytest.raises(ToolConfigError, match="Invalid tool"):
        ToolWrapper(env, [42])
    with pytest.raises(ToolConfigError, match="max_tool_uses"):
        ToolWrapper(env, [SEARCH], max_tool_uses=-1)
    with pytest.raises(ToolConfigError, match="at least one"):
        ToolWrapper(env, [])


def test_tool_instances_are_used_as_given_and_not_closed():
    tool = SearchTool(corpus=SAMPLE_CORPUS)
    env = ToolWrapper(gem_core.make(ENV_ID), tool)
    assert env.tools == [tool]
    env.close()
    assert tool.execute(tool.parse(QUERY)).success


def test_a_plugin_registers_a_tool_through_the_tools_hook(tmp_path):
    root = fake_distribution(
        tmp_path / "site", "gem-shout",
        plugins={"shout": "shout_plugin"},
        modules={
            "shout_plugin": '''
                from gem_core import hookimpl

                @hookimpl
                def gem_register_tools(register):
                    register("shout", "shout_tool:ShoutTool", description="Upper-cases text.")
            ''',
            "shout_tool": '''
                from gem_core.tools import Tool, ToolCall, ToolOutput
                from gem_core.tools.base import find_block

                class ShoutTool(Tool):
                    name = "shout"
                    blocking = False

                    def __init__(self, suffix="!"):
                        self.suffix = suffix

                    def instructions(self):
                        return "Write <shout>text</shout> to shout it."

                    def parse(self, action):
                        block = find_block(action, "<shout>", "</shout>")
                        return None if block is None else ToolCall(self.name, block[2], block[0], block[1])

                    def execute(self, call):
                        return ToolOutput(call.arguments.upper() + self.suffix, True)
            ''',
        },
    )
    out = run_python(f'''
        import gem_core
        from gem_core.registry import apply_wrappers
        env = apply_wrappers(gem_core.make({ENV_ID!r}), [("tool", {{"tools": [("shout", {{"suffix": "!!"}})]}})])
        observation, info = env.reset(seed=0)
        assert observation.endswith("Write <shout>text</shout> to shout it."), observation
        print(env.step("<shout>hello</shout>")[0])
    ''', path=[root])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "HELLO!!"


def test_deep_copies_share_the_tools_too():
    import copy

    env = make()
    env.reset(seed=2)
    env.step(QUERY)
    twin = copy.deepcopy(env)
    assert twin.tools[0] is env.tools[0] and twin.tool_uses == 1
    twin.close()
    assert env.step(QUERY)[4]["tool_success"]


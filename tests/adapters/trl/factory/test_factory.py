"""GEM's environment_factory objects, called as TRL calls them (``reset(**row)``, tools by name with
keyword arguments, ``get_reward``), against in-process play of the same environment; the schema
TRL shows the model is transformers' own ``get_json_schema`` of each tool."""

from __future__ import annotations

import inspect
import json
import math

import pytest
from transformers.utils import get_json_schema

import gem_core
from gem_adapters.common.options import EpisodeOptions
from gem_adapters.trl.factory import environment_factory, environment_return
from gem_adapters.trl.tool_functions import as_method
from gem_adapters.trl.versions import has_environment_reward
from gem_core.errors import GemError
from gem_core.tools.base import ToolFunction
from gem_core.wrappers.observation import as_seen
from tests.adapters import failing
from tests.adapters.trl.conftest import EASY

TOOL_MATH = "math:Products-v0+Tool"


def tools_of(cls) -> list[str]:
    """The methods TRL offers as tools: public functions of the class but reset and get_reward."""
    return sorted(name for name, _ in inspect.getmembers(cls, inspect.isfunction)
                  if not name.startswith("_") and name not in ("reset", "get_reward"))


def test_a_text_environment_is_one_act_tool_whose_answers_are_in_process_play():
    cls = environment_factory(EASY)
    assert tools_of(cls) == ["act"]
    schema = get_json_schema(cls().act)["function"]
    assert schema["name"] == "act" and schema["parameters"]["required"] == ["action"]
    assert schema["parameters"]["properties"]["action"]["type"] == "string"

    env, reference = cls(), gem_core.make(EASY)
    seed = 3
    first = as_seen(*reference.reset(seed=seed))  # as the agent sees it (see EnvSession)
    assert env.reset(prompt=[{"role": "user", "content": ""}], env_id=EASY, seed=seed) == first
    rewards = []
    for guess in (5, 2, 3):
        observation, reward, terminated, truncated, info = reference.step(f"\\boxed{{{guess}}}")
        rewards.append(reward)
        assert env.act(action=f"\\boxed{{{guess}}}") == as_seen(observation, info, done=terminated or truncated)
        if terminated or truncated:
            break
    assert terminated and env.info["stop"] == "terminated" and env.info["success"]
    assert env.info["turn_rewards"] == rewards and env.info["seed"] == seed
    assert env.episode_return == math.fsum(rewards) > 0
    if has_environment_reward():
        assert env.get_reward() == env.episode_return
    else:  # TRL before 1.8 would show get_reward to the model as a tool
        assert not hasattr(env, "get_reward")
    assert "over" in env.act(action="\\boxed{3}") and env.info["turn_rewards"] == rewards

    # reset often: the same object plays the next row's episode from its start
    assert env.reset(env_id=EASY, seed=seed) == first and env.info["turn_rewards"] == []


def test_a_served_environment_plays_through_the_factory_unchanged():
    from tests.serve.servers import gem_serve  # gem serve as a process, as users start it

    with gem_serve(EASY) as (url, _):
        env_id = f"remote:{url}"
        cls = environment_factory(env_id)
        assert tools_of(cls) == ["act"]
        for seed in (1, 4):
            env, reference = cls(), gem_core.make(EASY)
            try:
                assert env.reset(prompt=[{"role": "user", "content": ""}], env_id=env_id, seed=seed) == \
                    as_seen(*reference.reset(seed=seed))
                for action in ("\\boxed{5}", "gibberish", "\\boxed{2}", "\\boxed{8}", "\\boxed{3}"):
                    observation, reward, terminated, truncated, info = reference.step(action)
                    assert env.act(action=action) == as_seen(observation, info, done=terminated or truncated)
                    if terminated or truncated:
                        break
                done = terminated or truncated
                assert env.info["stop"] == ("terminated" if terminated else "truncated" if truncated else None)
                assert env.info["turn_rewards"] and done == (env.info["stop"] is not None)
                assert env.info["seed"] == seed
            finally:
                reference.close()


def test_a_tool_call_with_wrong_arguments_raises_for_the_model_and_the_episode_goes_on():
    env = environment_factory(EASY)()
    env.reset(env_id=EASY, seed=0)
    for bad in ({"guess": 5}, {}, {"action": 5}):
        with pytest.raises(TypeError):  # TRL sends the error to the model as the tool's answer
            env.act(**bad)
    assert env.info["turn_rewards"] == [] and env.info["stop"] is None
    assert "Turn 1" in env.act(action="\\boxed{5}")


def test_an_environment_that_raises_ends_its_episode_and_says_so():
    with failing.registered() as env_id:
        env = environment_factory(env_id)()
        env.reset(env_id=env_id, seed=0)
        env.act(action="\\boxed{1}")
        answer = env.act(action="\\boxed{2}")
    assert failing.MESSAGE in answer
    assert env.info["stop"] == "failed" and failing.MESSAGE in env.info["error"]
    assert env.info["failure"]["kind"] == "error" and env.info["failure"]["turn"] == 1
    assert env.info["turn_rewards"] == [failing.FIRST_REWARD, 0.0]
    assert env.episode_return is None  # TRL leaves a completion whose every reward is None out
    assert "over" in env.act(action="\\boxed{3}")


def test_bad_configuration_fails_when_the_factory_is_made():
    with pytest.raises(GemError, match="GuessTheNumber"):
        environment_factory("game:GuessTheNumbr-v0-easy")
    with pytest.raises(GemError, match="unknown_option"):
        environment_factory(EASY, unknown_option=1)
    with pytest.raises(GemError, match="wrapper"):
        environment_factory(EASY, options=EpisodeOptions(wrappers=("no_such_wrapper",)))
    env = environment_factory(EASY)()
    with pytest.raises(GemError, match="reset"):
        env.act(action="\\boxed{1}")
    with pytest.raises(GemError, match="game:Sudoku-v0-easy"):
        env.reset(env_id="game:Sudoku-v0-easy", seed=0)


def test_env_kwargs_and_max_turns_reach_the_episode():
    cls = environment_factory(EASY, options=EpisodeOptions(max_turns=1), max_number=3)
    env = cls()
    assert "from 1 to 3" in env.reset(env_id=EASY, seed=0)
    env.act(action="\\boxed{9}")
    assert env.info["stop"] in ("max_turns", "terminated")


def test_several_ids_are_trls_dict_of_factories_where_trl_takes_one():
    ids = [EASY, "game:GuessTheNumber-v0-hard"]
    if not has_environment_reward():
        with pytest.raises(GemError, match="1.8"):
            environment_factory(ids)
        return
    factories = environment_factory(ids)
    assert list(factories) == ids
    env = factories[ids[1]]()
    assert "from 1 to 50" in env.reset(env_id=ids[1], seed=0)
    assert list(environment_factory({"easy": EASY})) == ["easy"]


def test_environment_return_scores_rollouts_only_where_trl_has_no_get_reward():
    envs = [environment_factory(EASY)() for _ in range(2)]
    for env, guess in zip(envs, (3, 9)):
        env.reset(env_id=EASY, seed=3)
        env.act(action=f"\\boxed{{{guess}}}")
    if has_environment_reward():
        with pytest.raises(GemError, match="twice"):
            environment_return(environments=envs)
    else:
        assert environment_return(environments=envs) == [env.episode_return for env in envs]
        assert environment_return(environments=envs)[0] > environment_return(environments=envs)[1]
    with pytest.raises(GemError, match="environment_factory"):
        environment_return(completions=["x"])


def test_a_tool_environment_offers_its_tools_by_name_plus_the_action():
    """math:Products-v0+Tool: GEM's Python tool is ``python(code)``; a call runs in GEM's sandbox
    through the tool wrapper (its budget and info apply) and the answer action grades."""
    cls = environment_factory(TOOL_MATH)
    assert tools_of(cls) == ["act", "python"]
    schema = get_json_schema(cls().python)["function"]
    assert schema["parameters"]["required"] == ["code"]
    env = cls()
    first = env.reset(env_id=TOOL_MATH, seed=1)
    assert "<python>" not in first  # the text instructions give way to the schema
    reference = gem_core.make(TOOL_MATH)
    reference_first, _ = reference.reset(seed=1)
    assert reference_first.startswith(first) and "<python>" in reference_first
    question = first.split("\n")[0]
    factors = [int(n) for n in __import__("re").findall(r"\d+", question)]
    answer = env.python(code=f"print({' * '.join(map(str, factors))})")
    assert "Code execution result" in answer and str(math.prod(factors)) in answer
    assert env.info["stop"] is None and env.info["turn_rewards"] == [0.0]
    env.act(action=f"\\boxed{{{math.prod(factors)}}}")
    assert env.info["stop"] == "terminated" and env.info["turn_rewards"][-1] == 1.0


def test_a_spent_tool_budget_is_said_without_a_turn():
    env = environment_factory(TOOL_MATH)()
    env.reset(env_id=TOOL_MATH, seed=0)
    for _ in range(5):  # the +Tool preset allows 5 calls
        env.python(code="print(1)")
    assert "all your tool calls" in env.python(code="print(1)")
    assert len(env.info["turn_rewards"]) == 5 and env.info["stop"] is None


def test_tool_functions_keep_their_names_and_json_schemas():
    """A tool function (an MCP server's tool, as MCPTool.functions lists it) becomes a method whose
    transformers schema matches its JSON schema; a call hands its name and arguments on."""
    function = ToolFunction("lookup", "Look a word up.\nIn the dictionary.", {
        "type": "object", "required": ["word"], "properties": {
            "word": {"type": "string", "description": "The word."},
            "limit": {"type": "integer", "description": "How many senses."},
            "style": {"type": "string", "enum": ["short", "long"]},
            "tags": {"type": "array", "items": {"type": "string"}}}})
    seen = []
    method = as_method(function, lambda self, name, arguments: seen.append((name, arguments)) or "ok")
    schema = get_json_schema(method.__get__(object()))["function"]
    assert schema["name"] == "lookup" and schema["description"] == "Look a word up. In the dictionary."
    properties = schema["parameters"]["properties"]
    assert schema["parameters"]["required"] == ["word"]
    assert (properties["word"]["type"], properties["limit"]["type"]) == ("string", "integer")
    assert properties["style"]["enum"] == ["short", "long"] and properties["tags"]["items"] == {"type": "string"}
    assert method(object(), word="gem", limit=2) == "ok" and seen == [("lookup", {"word": "gem", "limit": 2})]
    for missing in ({"limit": 2}, {"word": None}):  # the required word is missing
        with pytest.raises(TypeError):
            method(object(), **missing)

    odd = as_method(ToolFunction("odd", "", {"properties": {"file-path": {"type": "string"}}}),
                    lambda self, name, arguments: json.dumps(arguments))
    assert list(inspect.signature(odd).parameters) == ["self", "arguments"]
    assert odd(object(), arguments={"file-path": "a"}) == '{"file-path": "a"}'
    with pytest.raises(GemError, match="reset"):
        as_method(ToolFunction("reset", "", {}), lambda self, name, arguments: "")

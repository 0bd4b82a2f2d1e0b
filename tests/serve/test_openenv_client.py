"""OpenEnv's own clients play GEM environments through ``gem serve`` and see what the same seed
gives in-process: OpenEnv 0.10's GenericEnvClient (sync and async) and MCPToolClient, run in
OpenEnv's environment, and openenv-core 0.3.0's GenericEnvClient, run here."""

from __future__ import annotations

import re

import httpx
import pytest

import gem_core
from gem_core.tools import actions
from tests.serve.openenv_peer import OpenEnvError
from tests.serve.servers import gem_serve

GAME = "game:GuessTheNumber-v0-easy"
MATH_TOOL = "math:Arithmetic-v0+Tool"
VOLATILE = {"duration"}  # timings inside a tool's info


def stable(info):
    if isinstance(info, dict):
        return {k: stable(v) for k, v in info.items() if k not in VOLATILE}
    return info


def in_process(env_id, seed, actions_of):
    env = gem_core.make(env_id)
    try:
        observation, info = env.reset(seed=seed)
        turns = [(observation, None, False, stable(info))]
        for action in actions_of(observation):
            observation, reward, terminated, truncated, info = env.step(action)
            turns.append((observation, reward, terminated or truncated, stable(info)))
            if terminated or truncated:
                break
        return turns
    finally:
        env.close()


def over_the_wire(client, seed, actions_of):
    result = client.reset(seed=seed)
    turns = [(result["observation"]["prompt"], result["reward"], result["done"],
              stable(result["observation"]["metadata"]["info"]))]
    for action in actions_of(result["observation"]["prompt"]):
        result = client.step({"message": action})
        turns.append((result["observation"]["prompt"], result["reward"], result["done"],
                      stable(result["observation"]["metadata"]["info"])))
        if result["done"]:
            break
    return turns


def guesses(_observation):
    return [r"\boxed{5}", "not a guess at all", r"\boxed{3}", r"\boxed{8}", r"\boxed{1}"]


def expression(observation):
    return re.search(r"Calculate (.+?)\.\n", observation).group(1)


@pytest.fixture(scope="module")
def game_server():
    with gem_serve(GAME) as (url, _):
        yield url


def test_the_generic_client_plays_a_game_as_in_process(openenv, game_server):
    with openenv.open("generic", game_server) as client:
        for seed in (0, 7):
            assert over_the_wire(client, seed, guesses) == in_process(GAME, seed, guesses)
        state = client.state()
        assert state["env_id"] == GAME and state["seed"] == 7 and state["step_count"] >= 1


def test_async_clients_play_their_own_episodes_at_once(openenv, game_server):
    episodes = [{"seed": seed, "actions": guesses("")} for seed in (11, 12, 13)]
    played = openenv.play_together(game_server, episodes)
    for episode, seen in zip(episodes, played):
        expected = in_process(GAME, episode["seed"], guesses)
        assert seen[0] == expected[0][0]
        assert [tuple(step) for step in seen[1:]] == [(o, r, d) for o, r, d, _ in expected[1:]]


def test_the_mcp_client_plays_a_tool_env_through_its_tools_as_in_process(openenv):
    with gem_serve(MATH_TOOL) as (url, _), openenv.open("mcp", url) as client:
        first = client.reset(seed=4)["observation"]
        tools = {tool["name"]: tool for tool in client.list_tools()}
        assert set(tools) == {"step", "python"}
        assert tools["python"]["input_schema"]["required"] == ["code"] and tools["step"]["description"]
        program = f"print({expression(first['prompt'])})"
        ran = client.call_tool("python", code=program)
        answered = client.call_tool("step", action=rf"\boxed{{{eval(expression(first['prompt']))}}}")
    env = gem_core.make(MATH_TOOL)
    try:
        local_first, _ = env.reset(seed=4)
        call = actions.action_text(env, "python", {"code": program})
        local = [env.step(call), env.step(rf"\boxed{{{eval(expression(local_first))}}}")]
    finally:
        env.close()
    assert first["prompt"] == local_first
    for result, (observation, reward, terminated, truncated, info) in zip((ran, answered), local):
        structured = result["structuredContent"]
        assert result["isError"] is False and result["content"][0]["text"] == observation == structured["observation"]
        assert (structured["reward"], structured["done"]) == (reward, terminated or truncated)
        assert stable(structured["info"]) == stable(info)
    assert ran["structuredContent"]["observation"].startswith("Code execution result:")  # the tool ran
    assert answered["structuredContent"]["reward"] == 1.0 and answered["structuredContent"]["done"]


def test_the_mcp_client_gets_clear_errors_and_its_session_goes_on(openenv):
    with gem_serve(MATH_TOOL) as (url, _), openenv.open("mcp", url) as client:
        with pytest.raises(OpenEnvError, match="No episode in progress: reset first"):
            client.call_tool("step", action="1")
        first = client.reset(seed=2)["observation"]["prompt"]
        with pytest.raises(OpenEnvError, match="Unknown tool 'shell'; this environment's tools are: step, python"):
            client.call_tool("shell", command="ls")
        with pytest.raises(OpenEnvError, match="python needs 'code': a string"):
            client.call_tool("python", code=5)
        with pytest.raises(OpenEnvError, match="step takes one argument, 'action'"):
            client.call_tool("step", answer="1")
        answer = client.call_tool("step", action=rf"\boxed{{{eval(expression(first))}}}")
        assert answer["structuredContent"]["reward"] == 1.0 and answer["structuredContent"]["step_count"] == 1


def test_openenv_core_0_3_client_still_plays(game_server):
    openenv_core = pytest.importorskip("openenv.core.generic_client",
                                       reason="openenv-core 0.3.0 is installed by scripts/install_test_deps.sh")
    with openenv_core.GenericEnvClient(base_url=game_server).sync() as client:
        result = client.reset(seed=3)
        turns = [(result.observation["prompt"], result.reward, result.done,
                  stable(result.observation["metadata"]["info"]))]
        for action in guesses(""):
            result = client.step({"message": action})
            turns.append((result.observation["prompt"], result.reward, result.done,
                          stable(result.observation["metadata"]["info"])))
            if result.done:
                break
    assert turns == in_process(GAME, 3, guesses)


def test_http_endpoints_follow_openenv(game_server):
    with httpx.Client(base_url=game_server, timeout=30) as http:
        assert http.get("/health").json() == {"status": "healthy"}
        assert http.get("/metadata").json()["name"] == GAME
        schema = http.get("/schema").json()
        assert schema["action"]["required"] == ["message"] and "prompt" in schema["observation"]["properties"]
        first = http.post("/reset", json={"seed": 3}).json()
        assert first["observation"]["prompt"] == in_process(GAME, 3, lambda _: [])[0][0]
        assert first["done"] is False and first["reward"] is None
        assert http.get("/state").json()["max_sessions"] >= 1
        openapi = http.get("/openapi.json").json()
        assert openapi["info"]["version"] == "1.0.0"
        assert {"/reset", "/step", "/state", "/health", "/metadata", "/schema", "/mcp"} <= set(openapi["paths"])

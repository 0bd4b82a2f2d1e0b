"""OpenEnv's own client (openenv-core's GenericEnvClient, sync and async) plays GEM environments
through ``gem serve`` and sees what the same seed gives in-process."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

import gem_core
from tests.serve.servers import gem_serve

from openenv.core.generic_client import GenericEnvClient  # noqa: E402  (servers skips without openenv)

GAME = "game:GuessTheNumber-v0-easy"
MATH_TOOL = "math:Arithmetic-v0+Tool"
VOLATILE = {"duration"}  # timings inside a tool's info


def stable(info):
    if isinstance(info, dict):
        return {k: stable(v) for k, v in info.items() if k not in VOLATILE}
    return info


def in_process(env_id, seed, actions):
    env = gem_core.make(env_id)
    try:
        observation, info = env.reset(seed=seed)
        turns = [(observation, None, False, stable(info))]
        for action in actions(observation):
            observation, reward, terminated, truncated, info = env.step(action)
            turns.append((observation, reward, terminated or truncated, stable(info)))
            if terminated or truncated:
                break
        return turns
    finally:
        env.close()


def over_the_wire(client, seed, actions):
    result = client.reset(seed=seed)
    turns = [(result.observation["prompt"], result.reward, result.done, stable(result.observation["metadata"]["info"]))]
    for action in actions(result.observation["prompt"]):
        result = client.step({"message": action})
        turns.append((result.observation["prompt"], result.reward, result.done,
                      stable(result.observation["metadata"]["info"])))
        if result.done:
            break
    return turns


def guesses(_observation):
    return [r"\boxed{5}", "not a guess at all", r"\boxed{3}", r"\boxed{8}", r"\boxed{1}"]


def tool_then_answer(observation):
    """Compute the question's expression with the Python tool, then answer it."""
    expression = re.search(r"Calculate (.+?)\.\n", observation).group(1)
    return [f"<python>print({expression})</python>", rf"\boxed{{{eval(expression)}}}"]


@pytest.fixture(scope="module")
def game_server():
    with gem_serve(GAME) as (url, _):
        yield url


def test_the_sync_client_plays_a_game_as_in_process(game_server):
    with GenericEnvClient(base_url=game_server).sync() as client:
        for seed in (0, 7):
            assert over_the_wire(client, seed, guesses) == in_process(GAME, seed, guesses)
        state = client.state()
        assert state["env_id"] == GAME and state["seed"] == 7 and state["step_count"] >= 1


def test_the_async_client_plays_a_game_as_in_process(game_server):
    async def play(seed):
        async with GenericEnvClient(base_url=game_server) as client:
            result = await client.reset(seed=seed, episode_id=f"episode-{seed}")
            assert result.observation["metadata"]["episode_id"] == f"episode-{seed}"
            assert result.observation["metadata"]["seed"] == seed and result.reward is None
            rewards = []
            for action in guesses(result.observation["prompt"]):
                result = await client.step({"message": action})
                rewards.append(result.reward)
                if result.done:
                    break
            return rewards

    played = asyncio.run(play(11))
    assert played == [turn[1] for turn in in_process(GAME, 11, guesses)[1:]]


def test_the_client_plays_a_tool_wrapped_math_env_as_in_process():
    with gem_serve(MATH_TOOL) as (url, _), GenericEnvClient(base_url=url).sync() as client:
        remote = over_the_wire(client, 4, tool_then_answer)
    local = in_process(MATH_TOOL, 4, tool_then_answer)
    assert remote == local
    assert remote[1][0].startswith("Code execution result:") and remote[-1][1] == 1.0  # the tool ran; correct


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

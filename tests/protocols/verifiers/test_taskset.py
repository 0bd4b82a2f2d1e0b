"""GEM environments through verifiers 0.4 (``verifiers.v1``), with verifiers' own machinery: its env
server and ``EnvClient.run`` play a GEM id through the ``gem-taskset`` taskset (every turn's reward
kept) and through verifiers' built-in ``openenv`` taskset pointed at ``gem serve``, against a
scripted chat server on loopback, to the rewards of a direct GEM run; ``vf-validate`` checks the
taskset. Runs in the verifiers stage (verifiers pins mcp and openai versions the core excludes)."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import subprocess
import sys

import pytest

import gem_core

vf = pytest.importorskip("verifiers.v1", reason="the verifiers stage installs verifiers")
from verifiers.v1.runtimes import SubprocessConfig  # noqa: E402
from verifiers.v1.serve import EnvClient, EnvServer  # noqa: E402
from verifiers.v1.types import SamplingConfig  # noqa: E402

from gem_taskset import GemTaskData  # noqa: E402
from tests.openai_servers import StubChatServer  # noqa: E402
from tests.serve.servers import gem_serve  # noqa: E402

GAME = "game:GuessTheNumber-v0-easy"
GUESSES = [r"I think \boxed{5}", "no guess here", r"\boxed{8}", r"\boxed{9}", r"\boxed{10}"]
KEY_VARIABLE = "GEM_TEST_STUB_KEY"


def scripted(body):
    """The n-th guess for the n-th user message of the conversation."""
    turn = sum(1 for message in body["messages"] if message["role"] == "user")
    return GUESSES[min(turn, len(GUESSES)) - 1]


def direct_rewards(seed):
    env = gem_core.make(GAME)
    env.reset(seed=seed)
    rewards = []
    for action in GUESSES:
        _, reward, terminated, truncated, _ = env.step(action)
        rewards.append(reward)
        if terminated or truncated:
            break
    env.close()
    return rewards


@pytest.fixture(scope="module")
def chat():
    os.environ[KEY_VARIABLE] = "not-a-secret"
    with StubChatServer(scripted, model="scripted") as server:
        yield server


def local_agent(**fields):
    return vf.AgentConfig(runtime=SubprocessConfig(), **fields)


def serve_and_run(config, task_data, chat):
    """``task_data`` run by verifiers' env server (a process of its own) through its EnvClient."""
    context = multiprocessing.get_context("spawn")
    addresses = context.Queue()
    server = context.Process(target=EnvServer.run_server, daemon=True,
                             kwargs={"address_queue": addresses, "config": config, "address": "tcp://127.0.0.1:0"})
    server.start()
    try:
        address = addresses.get(timeout=120)

        async def run():
            client = EnvClient(address)
            try:
                await client.wait_for_server_startup(timeout=120)
                return await asyncio.wait_for(client.run(
                    client=vf.EvalClientConfig(base_url=chat.base_url, api_key_var=KEY_VARIABLE), model="scripted",
                    sampling=SamplingConfig(), task_data=task_data), 300)
            finally:
                await client.close()

        return asyncio.run(run())
    finally:
        server.terminate()
        server.join(30)


def test_env_client_plays_a_gem_id_through_the_taskset_with_every_turns_reward(chat):
    config = vf.env_config_type("gem-taskset")(
        taskset={"id": "gem-taskset", "env_id": GAME, "seeds": 3}, player=local_agent())
    episode = serve_and_run(config, GemTaskData(env_id=GAME, seed=2, prompt=None).model_dump(), chat)
    (trace,) = episode.traces
    expected = direct_rewards(2)
    assert len(expected) > 1 and trace.info["gem"]["rewards"] == expected
    assert trace.rewards["gem_return"].score == pytest.approx(sum(expected))
    assert [trace.metrics[f"reward_turn_{turn}"] for turn in range(1, len(expected) + 1)] == expected
    assert trace.info["gem"]["terminated"] or trace.info["gem"]["truncated"]
    asked = [m["content"] for m in chat.requests[-1]["messages"] if m["role"] == "user"]
    env = gem_core.make(GAME)
    assert asked[0] == env.reset(seed=2)[0]  # the reset observation is the first user message
    env.close()


def test_verifiers_openenv_taskset_plays_gem_serve(chat):
    with gem_serve(GAME) as (url, _):
        config = vf.env_config_type("openenv")(
            taskset={"id": "openenv", "base_url": url, "resets": [{"seed": 4}]},
            player=local_agent(harness={"id": "gem-taskset"}))
        from verifiers.v1.utils.loaders import load_taskset

        (task,) = list(load_taskset(config.taskset))
        episode = serve_and_run(config, task.data.model_dump(), chat)
    (trace,) = episode.traces
    assert episode.errors == [] and trace.ok, (episode.errors, trace.errors)
    assert trace.rewards["openenv_reward"].score == pytest.approx(sum(direct_rewards(4)))  # only the sum is kept
    first = json.loads(chat.requests[-1]["messages"][0]["content"])
    assert first["action_schema"]["required"] == ["message"]


def test_vf_validate_checks_the_taskset(tmp_path):
    validate = os.path.join(os.path.dirname(sys.executable), "vf-validate")
    done = subprocess.run([validate, "gem-taskset", "--taskset.env-id", GAME, "--taskset.seeds", "2",
                           "--runtime.type", "subprocess", "-o", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (summary,) = tmp_path.rglob("summary.json")
    assert json.loads(summary.read_text())


def test_gem_plays_a_verifiers_environment_with_the_control_inverted():
    """verifiers' environment for gem-taskset, played from GEM: its model calls are the observations."""
    env = gem_core.make("verifiers:gem-taskset", taskset_config={"env_id": GAME, "seeds": 3}, timeout=300)
    direct = gem_core.make(GAME)
    try:
        observation, info = env.reset(seed=1)
        assert observation == direct.reset(seed=1)[0] and info["index"] == 1
        rewards = []
        for action in GUESSES:
            observation, reward, terminated, truncated, info = env.step(action)
            expected = direct.step(action)
            rewards.append(expected[1])
            if terminated:
                break
            assert (observation, reward, terminated) == (expected[0], 0.0, False)  # rewards come at the end
        assert terminated and reward == pytest.approx(sum(rewards)) and len(rewards) > 1
        assert info["metrics"][0] == {f"reward_turn_{turn}": r for turn, r in enumerate(rewards, 1)}
        with pytest.raises(gem_core.GemError, match="reset first"):
            env.step("x")
    finally:
        env.close()
        direct.close()

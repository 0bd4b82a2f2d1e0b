"""GEM's remote environments (``remote:<url>``): playing ``gem serve`` exactly as in-process,
through vector environments and ``collect_episodes``; playing an environment served by OpenEnv
0.10's own server code; and the failures a network brings (unreachable, killed mid-episode)."""

from __future__ import annotations

import pytest

import gem_core
from gem_serve.env import RemoteEnvError
from tests.helpers import free_port
from tests.serve.openenv_peer import countdown_server
from tests.serve.servers import gem_serve

GAME = "game:GuessTheNumber-v0-easy"


def guess_policy(observations):
    return [r"\boxed{5}" if "guess" in o.lower() or "lower" in o or "higher" in o else r"\boxed{2}" for o in observations]


@pytest.fixture(scope="module")
def game_url():
    with gem_serve(GAME, "--max-sessions", "40") as (url, _):
        yield url


def test_remote_id_plays_the_served_env_exactly(game_url):
    remote, local = gem_core.make(f"remote:{game_url}"), gem_core.make(GAME)
    try:
        assert remote.spec.id == f"remote:{game_url}"
        for seed in (1, 2):
            assert remote.reset(seed=seed) == local.reset(seed=seed)
            for action in (r"\boxed{5}", "gibberish", r"\boxed{9}", r"\boxed{1}", r"\boxed{2}"):
                step = remote.step(action)
                assert step == local.step(action)
                if step[2] or step[3]:
                    break
        assert remote.sample_random_action().startswith(r"\boxed{")
    finally:
        remote.close()
        local.close()


def test_vector_env_and_collect_episodes_use_remote_envs_unchanged(game_url):
    remote = gem_core.make_vec(f"remote:{game_url}", 4, mode="async", seed=100)
    local = gem_core.make_vec(GAME, 4, seed=100)
    try:
        got = gem_core.collect_episodes(remote, guess_policy, 8, seed=100)
        expected = gem_core.collect_episodes(local, guess_policy, 8, seed=100)
    finally:
        remote.close()
        local.close()
    assert [(e.seed, e.rewards, [t.observation for t in e.turns]) for e in got] == \
           [(e.seed, e.rewards, [t.observation for t in e.turns]) for e in expected]
    assert all(e.env_id == f"remote:{game_url}" for e in got)


def test_remote_env_plays_an_env_served_by_openenv_own_server():
    with countdown_server() as url:  # OpenEnv 0.10's create_fastapi_app, in OpenEnv's environment
        env = gem_core.make(f"remote:{url}", action_field="word", observation_field="echoed")
        try:
            observation, info = env.reset(seed=5)
            assert observation == "start 5" and info == {"length": 0}
            assert env.step("hello") == ("hello", 5.0, False, False, {"length": 5})
            assert env.step("stop") == ("stop", 4.0, True, False, {"length": 4})
            assert env.reset(seed=6)[0] == "start 6"  # a new episode on the same session
            with pytest.raises(RemoteEnvError, match="cannot sample actions"):
                env.sample_random_action()
        finally:
            env.close()
        # Without observation_field, the only string field of the observation is the text.
        env = gem_core.make(f"remote:{url}", action_field="word")
        try:
            assert env.reset()[0] == "start None"
            # An action OpenEnv's server rejects (it wants "word") is a clear error, not a hang.
            wrong = gem_core.make(f"remote:{url}")
            with pytest.raises(RemoteEnvError, match="VALIDATION_ERROR|EXECUTION_ERROR"):
                wrong.reset(seed=1)
                wrong.step("hello")
            wrong.close()
        finally:
            env.close()


def test_an_unreachable_server_is_a_clear_error():
    port = free_port()  # a port nothing listens on
    with pytest.raises(RemoteEnvError, match=f"Cannot reach the environment server at http://127.0.0.1:{port}"):
        gem_core.make(f"remote:http://127.0.0.1:{port}", connect_timeout=5)
    with pytest.raises(gem_core.GemError, match="starts with http://"):
        gem_core.make("remote:127.0.0.1:8000")
    with pytest.raises(gem_core.GemError, match="needs the server's address"):
        gem_core.make("remote:{url}")


def test_a_server_killed_mid_episode_is_a_fault_on_its_slot_only(game_url):
    with gem_serve(GAME) as (doomed_url, doomed):
        vec = gem_core.make_vec([f"remote:{doomed_url}", f"remote:{game_url}"], mode="async", seed=7)
        try:
            observations, infos = vec.reset()
            assert all(observations) and all("episode_seed" in i for i in infos)
            first = vec.step([r"\boxed{5}", r"\boxed{5}"])
            doomed.kill()
            doomed.wait(10)
            observations, rewards, terminated, truncated, infos = vec.step([r"\boxed{3}", r"\boxed{3}"])
            fault = infos[0]["fault"]
            assert fault["phase"] == "step" and ("was closed" in fault["error"] or "failed" in fault["error"])
            assert truncated[0] and observations[0] == "" and rewards[0] == 0.0
            assert "fault" not in infos[1] and observations[1]  # the other slot's episode goes on
            # The slot's next step resets it; the server is gone, so that reset is a fault too.
            _, _, _, _, infos = vec.step([r"\boxed{1}", r"\boxed{1}"])
            assert infos[0]["fault"]["phase"] == "reset" and "Cannot reach" in infos[0]["fault"]["error"]
            assert "fault" not in infos[1]
            assert first[4][1].get("turn") == 1
        finally:
            vec.close()

"""``gem serve``'s sessions: many at once, the session limit, the idle timeout, the token, messages
that are not valid, and environments that raise; each checked with OpenEnv 0.10's own client where
a client is involved."""

from __future__ import annotations

import json
import os
import time

import httpx
import pytest
from websockets.sync.client import connect

import gem_core
from gem_core.core import Env
from gem_serve.env import RemoteEnvError
from gem_serve.server import EnvServer
from tests.serve.openenv_peer import OpenEnvError
from tests.serve.servers import gem_serve, in_thread

GAME = "game:GuessTheNumber-v0-easy"
SESSIONS = 32


def test_32_concurrent_sessions_each_play_their_own_episode(openenv):
    actions = [r"\boxed{5}", r"\boxed{3}", r"\boxed{8}", r"\boxed{1}"]
    with gem_serve(GAME, "--max-sessions", str(SESSIONS)) as (url, _):
        remote = openenv.play_together(url, [{"seed": seed, "actions": actions} for seed in range(SESSIONS)])
    env = gem_core.make(GAME)
    for seed in range(SESSIONS):
        expected = [env.reset(seed=seed)[0]]
        for action in actions:
            observation, reward, terminated, truncated, _ = env.step(action)
            expected.append([observation, reward, terminated or truncated])
            if terminated or truncated:
                break
        assert remote[seed] == expected, seed
    env.close()


def test_the_session_limit_answers_a_clear_error_and_frees_on_close(openenv):
    server = EnvServer(lambda: gem_core.make(GAME), GAME, max_sessions=2)
    with in_thread(server.app()) as url:
        first, second = gem_core.make(f"remote:{url}"), gem_core.make(f"remote:{url}")
        with pytest.raises(RemoteEnvError, match=r"at capacity \(2 sessions\).*CAPACITY_REACHED"):
            gem_core.make(f"remote:{url}")
        with openenv.open("generic", url) as client, pytest.raises(OpenEnvError, match="CAPACITY_REACHED"):
            client.reset(seed=0)
        first.close()
        deadline = time.monotonic() + 10
        while len(server.sessions) > 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        third = gem_core.make(f"remote:{url}")  # the closed session's place is free again
        assert third.reset(seed=1)[0] and second.reset(seed=1)[0]
        third.close()
        second.close()


def test_idle_sessions_are_closed_and_a_reset_opens_a_new_one():
    server = EnvServer(lambda: gem_core.make(GAME), GAME, max_sessions=4, session_timeout=1.0)
    with in_thread(server.app()) as url:
        env = gem_core.make(f"remote:{url}")
        env.reset(seed=3)
        env.step(r"\boxed{5}")
        deadline = time.monotonic() + 10
        while server.sessions and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not server.sessions  # closed, its environment with it
        with pytest.raises(RemoteEnvError, match="idle for more than 1 s"):
            env.step(r"\boxed{4}")
        assert env.reset(seed=3)[0] == gem_core.make(GAME).reset(seed=3)[0]  # a fresh session
        assert len(server.sessions) == 1
        env.close()


def test_a_token_is_required_when_configured(openenv):
    environ = {**os.environ, "MY_TOKEN": "s3cret"}
    with gem_serve(GAME, "--token-env", "MY_TOKEN", env=environ) as (url, _):
        with pytest.raises(OpenEnvError, match="403"):  # OpenEnv's client without the token
            with openenv.open("generic", url):
                pass
        authorised = url.replace("http://", "http://gem:s3cret@")  # OpenEnv's client sends URL credentials
        with openenv.open("generic", authorised) as client:
            assert client.reset(seed=1)["observation"]["prompt"]
        with pytest.raises(RemoteEnvError, match="HTTP 403"):
            gem_core.make(f"remote:{url}", token="wrong")
        env = gem_core.make(f"remote:{url}", token="s3cret")
        assert env.reset(seed=1)[0]
        env.close()
        with httpx.Client(base_url=url, timeout=30) as http:
            assert http.get("/health").status_code == 200
            assert http.post("/reset", json={}).status_code == 401
            assert http.post("/reset", json={}, headers={"Authorization": "Bearer s3cret"}).status_code == 200
    with pytest.raises(Exception):  # an unset variable is refused before serving
        with gem_serve(GAME, "--token-env", "NO_SUCH_VARIABLE_SET"):
            pass


def test_invalid_messages_get_errors_and_the_session_goes_on():
    server = EnvServer(lambda: gem_core.make(GAME), GAME, max_sessions=2)
    with in_thread(server.app()) as url, connect(url.replace("http", "ws") + "/ws") as ws:
        def ask(raw):
            ws.send(raw)
            return json.loads(ws.recv(timeout=10))

        assert ask("{not json")["data"]["code"] == "INVALID_JSON"
        assert ask("[1, 2]")["data"]["code"] == "VALIDATION_ERROR"
        assert ask('{"type": "jump"}')["data"]["code"] == "UNKNOWN_TYPE"
        assert ask(json.dumps({"type": "step", "data": {"message": "x"}}))["data"]["code"] == "SESSION_ERROR"
        assert ask(json.dumps({"type": "reset", "data": {"seed": "three"}}))["data"]["code"] == "VALIDATION_ERROR"
        assert ask(json.dumps({"type": "reset", "data": {"seed": 1}}))["type"] == "observation"
        for bad in ({"type": "step"}, {"type": "step", "data": {"message": 5}},
                    {"type": "step", "data": {"message": "x", "extra": 1}}):
            reply = ask(json.dumps(bad))
            assert reply["type"] == "error" and reply["data"]["code"] == "VALIDATION_ERROR" and reply["data"]["message"]
        ws.send(b"\xff\xfe binary garbage")
        assert json.loads(ws.recv(timeout=10))["data"]["code"] == "INVALID_JSON"
        reply = ask(json.dumps({"type": "step", "data": {"message": "x" * 200_000}}))  # huge, malformed action
        local = gem_core.make(GAME)
        local.reset(seed=1)
        observation, reward, terminated, truncated, _ = local.step("x" * 200_000)
        assert reply["type"] == "observation" and reply["data"]["observation"]["prompt"] == observation
        assert (reply["data"]["reward"], reply["data"]["done"]) == (reward, terminated or truncated)
        assert ask(json.dumps({"type": "state"}))["data"]["step_count"] == 1
        with httpx.Client(base_url=url, timeout=30) as http:
            assert http.post("/reset", content=b"{nope").status_code == 400
            assert http.post("/reset", json={"seed": "x"}).status_code == 422
            assert http.post("/step", json={"nothing": 1}).status_code == 422
            step = http.post("/step", json={"action": {"message": "x"}})
            assert step.status_code == 409 and "/ws" in step.json()["detail"]


class Faulty(Env):
    """Raises when told to; counts its steps otherwise."""

    def reset(self, seed=None, **options):
        super().reset(seed)
        if options.get("fail"):
            raise RuntimeError("reset went wrong")
        return "ready", {}

    def step(self, action):
        if action == "raise":
            raise ValueError("the environment broke")
        return f"you said {action}", 1.0, False, False, {}


def test_an_environment_that_raises_ends_its_episode_with_a_fault_not_the_server(openenv):
    server = EnvServer(Faulty, "test:Faulty", max_sessions=2)
    with in_thread(server.app()) as url:
        with openenv.open("generic", url) as client:
            client.reset()
            result = client.step({"message": "raise"})
            assert result["done"] and result["reward"] == 0.0 and result["observation"]["prompt"] == ""
            fault = result["observation"]["metadata"]["fault"]
            assert fault["phase"] == "step" and "ValueError: the environment broke" in fault["error"]
            with pytest.raises(OpenEnvError, match="reset went wrong"):
                client.reset(fail=True)
            assert client.reset()["observation"]["prompt"] == "ready"  # the session goes on
            assert client.step({"message": "hi"})["observation"]["prompt"] == "you said hi"
        env = gem_core.make(f"remote:{url}")
        env.reset()
        with pytest.raises(RemoteEnvError, match="failed: ValueError: the environment broke"):
            env.step("raise")
        assert env.reset()[0] == "ready"
        env.close()


def test_an_environment_that_cannot_be_made_refuses_the_session_clearly(openenv):
    def broken():
        raise OSError("the dataset is missing")

    server = EnvServer(broken, "test:Broken", max_sessions=2)
    with in_thread(server.app()) as url:
        with pytest.raises(RemoteEnvError, match="Making test:Broken failed: OSError: the dataset is missing"):
            gem_core.make(f"remote:{url}")
        with openenv.open("generic", url) as client, pytest.raises(OpenEnvError, match="FACTORY_ERROR"):
            client.reset()
        assert not server.sessions


class Computes(Env):
    """Spends about a millisecond of CPU per call, and never waits."""

    def reset(self, seed=None, **options):
        super().reset(seed)
        return "ready", {}

    def step(self, action):
        deadline = time.thread_time() + 0.001
        while time.thread_time() < deadline:
            pass
        return "done computing", 0.0, False, False, {}


class Waits(Computes):
    """Waits (sleeps) two milliseconds per call without declaring ``blocking``."""

    def step(self, action):
        time.sleep(0.002)
        return "done waiting", 0.0, False, False, {}


@pytest.mark.parametrize("env_class, route", [(Computes, "inline"), (Waits, "thread")])
def test_a_session_runs_calls_where_the_vector_environments_would(env_class, route):
    """Sessions of an environment that does not declare ``blocking`` are probed as vector slots
    are: calls that wait move to a worker thread, calls that only compute stay on the event loop,
    however much the machine's other work delays them."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from gem_serve.sessions import Session

    async def play():
        with ThreadPoolExecutor(2) as executor:
            session = Session("test", executor)
            await session.start(env_class)
            assert session.route == "probe"
            await session.reset(None, None, {})
            for _ in range(4):
                await session.step("go")
            settled = session.route
            session.close()
            return settled

    assert asyncio.run(play()) == route

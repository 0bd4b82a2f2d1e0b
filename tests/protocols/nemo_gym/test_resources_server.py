"""GEM environments as a NeMo Gym resources server (gem_serve.nemo_gym_server), on NeMo Gym 0.4's
own GymnasiumServer, played over HTTP as NeMo Gym's gymnasium agent plays it (the rollout's row to
/reset, the model's response to /step, sessions by NeMo Gym's cookie) with NeMo Gym's own response
models, to the rewards of a direct GEM run; bad input and failing environments. Runs in the
nemo_gym stage (NeMo Gym 0.4 needs Python 3.12 and pins mcp<2 and openai<=2.7.2)."""

from __future__ import annotations

import httpx
import pytest

import gem_core
from gem_core.core import Env
from gem_core.registry import deregister, register

pytest.importorskip("nemo_gym", reason="the nemo_gym stage installs NeMo Gym")
from nemo_gym.openai_utils import NeMoGymResponse, NeMoGymResponseOutputMessage, NeMoGymResponseOutputText  # noqa: E402
from nemo_gym.server_utils import ServerClient  # noqa: E402
from resources_servers.gymnasium import EnvResetResponse, EnvStepResponse  # noqa: E402

from gem_serve.nemo_gym_server import GemResourcesServer, GemResourcesServerConfig  # noqa: E402
from tests.serve.servers import in_thread  # noqa: E402

GAME = "game:GuessTheNumber-v0-easy"
GUESSES = [r"\boxed{5}", "no guess", r"\boxed{8}", r"\boxed{9}", r"\boxed{10}"]
ROW = {"responses_create_params": {"input": [{"role": "user", "content": "play"}]}}


def response(text):
    """A model's answer, as NeMo Gym's model servers return it."""
    return NeMoGymResponse(
        id="resp", created_at=0.0, model="scripted", object="response", parallel_tool_calls=True, tool_choice="auto",
        tools=[], output=[NeMoGymResponseOutputMessage(
            id="msg", role="assistant", status="completed", type="message",
            content=[NeMoGymResponseOutputText(annotations=[], text=text, type="output_text")])]).model_dump()


def serving(env_id, max_sessions=4):
    config = GemResourcesServerConfig(host="127.0.0.1", port=0, entrypoint="gem_serve/nemo_gym_server.py",
                                      name="gem", env_id=env_id, max_sessions=max_sessions)
    from unittest.mock import MagicMock  # the server never calls other servers: no head server to ask

    server = GemResourcesServer(config=config, server_client=MagicMock(spec=ServerClient))
    return in_thread(server.setup_webserver())


def play(client, seed):
    reset = EnvResetResponse.model_validate(client.post("/reset", json={**ROW, "seed": seed}).json())
    turns = [reset.observation]
    for guess in GUESSES:
        answer = client.post("/step", json={**ROW, "seed": seed, "response": response(guess)})
        step = EnvStepResponse.model_validate(answer.json())
        turns.append((step.observation, step.reward, step.terminated, step.truncated))
        if step.terminated or step.truncated:
            break
    return turns


def direct(seed):
    env = gem_core.make(GAME)
    turns = [env.reset(seed=seed)[0]]
    for guess in GUESSES:
        observation, reward, terminated, truncated, _ = env.step(guess)
        turns.append((observation, reward, terminated, truncated))
        if terminated or truncated:
            break
    env.close()
    return turns


def test_two_sessions_play_gem_episodes_as_in_process():
    with serving(GAME) as url, httpx.Client(base_url=url) as first, httpx.Client(base_url=url) as second:
        first.post("/reset", json={**ROW, "seed": 1})
        assert play(second, 2) == direct(2)  # another session meanwhile
        assert play(first, 1) == direct(1)  # a new reset on the same session starts over
        assert first.post("/step", json={**ROW, "response": response("x")}).status_code == 409  # the episode ended


def test_bad_rows_get_clear_errors_and_leave_the_session_alone():
    with serving(GAME, max_sessions=1) as url, httpx.Client(base_url=url) as client:
        for row in ({**ROW}, {**ROW, "seed": -1}, {**ROW, "seed": "3"}, {**ROW, "seed": 1, "env_id": "game:Other-v0"}):
            answer = client.post("/reset", json=row)
            detail = answer.json()["detail"]
            assert answer.status_code == 422 and ("seed" in detail or "serves" in detail), detail
        assert client.post("/step", json={**ROW, "response": response("x")}).status_code == 409
        assert client.post("/reset", json={**ROW, "seed": 0}).status_code == 200
        with httpx.Client(base_url=url) as other:
            assert other.post("/reset", json={**ROW, "seed": 0}).status_code == 503  # max_sessions
        assert client.post("/step", json={**ROW, "response": response(r"\boxed{5}")}).status_code == 200


class Crashes(Env):
    def reset(self, seed=None, **options):
        super().reset(seed)
        return "go", {}

    def step(self, action):
        raise RuntimeError("the grader crashed")


def test_an_environment_that_raises_fails_the_rollout():
    register("test:Crashes-v0", Crashes)
    try:
        with serving("test:Crashes-v0") as url, httpx.Client(base_url=url) as client:
            assert client.post("/reset", json={**ROW, "seed": 0}).json()["observation"] == "go"
            answer = client.post("/step", json={**ROW, "response": response("x")})
            assert answer.status_code == 502 and "the grader crashed" in answer.json()["detail"]
            assert client.post("/step", json={**ROW, "response": response("x")}).status_code == 409
    finally:
        deregister("test:Crashes-v0")

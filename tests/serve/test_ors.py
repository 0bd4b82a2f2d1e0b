"""ORS, the Open Reward Standard, both ways: ors-sdk's own client (``ors.client.ORS``) plays GEM
environments served by ``gem serve --ors`` exactly as in-process, and bad requests get ORS's own
error shapes; GEM plays an environment written with ors-sdk's server classes (``ors:<name>``), in
a vector environment; environments and servers that fail mid-episode give failed episodes."""

from __future__ import annotations

import time

import httpx
import pytest

import gem_core
from gem_core.core import Env
from gem_core.registry import deregister, register

ors = pytest.importorskip("ors", reason="the ors extra is installed by scripts/install_test_deps.sh")
from ors.client import ORS, ToolCallError  # noqa: E402

from gem_serve.ors_env import OrsEnvError  # noqa: E402
from gem_serve.ors_server import TEST_SEEDS_FROM, OrsService, servable_ids  # noqa: E402
from gem_serve.server import EnvServer  # noqa: E402
from tests.serve import ors_peer  # noqa: E402
from tests.serve.servers import gem_serve, in_thread  # noqa: E402

GAME = "game:GuessTheNumber-v0-easy"
GAME_TOOL = "test:GuessTheNumberWithPython-v0"  # the game with the Python tool (the +Tool ids' wrapper)
GUESSES = [r"\boxed{5}", "not a guess", r"\boxed{3}", r"\boxed{8}", r"\boxed{1}", r"\boxed{2}"]


def direct_run(env_id, seed, actions):
    """(prompt, [(observation, reward, done)]) of a GEM run in-process."""
    env = gem_core.make(env_id)
    try:
        prompt, _ = env.reset(seed=seed)
        turns = []
        for action in actions:
            observation, reward, terminated, truncated, _ = env.step(action)
            turns.append((observation, reward, terminated or truncated))
            if terminated or truncated:
                break
        return prompt, turns
    finally:
        env.close()


def ors_run(session, actions):
    prompt = session.get_prompt()[0].text
    turns = []
    for action in actions:
        output = session.call_tool("step", {"action": action})
        turns.append((output.blocks[0].text, output.reward, output.finished))
        if output.finished:
            break
    return prompt, turns


@pytest.fixture(scope="module")
def served():
    """``gem serve GAME --ors-env GAME_TOOL --ors-tasks 8``'s application, in a thread."""
    game = gem_core.registry.spec(GAME)
    register(GAME_TOOL, game.entry_point, kwargs=dict(game.kwargs), wrappers=("python_tool_no_int_reward",))
    try:
        server = EnvServer(lambda: gem_core.make(GAME), GAME, max_sessions=8,
                           ors=OrsService([GAME, GAME_TOOL], max_sessions=8, tasks=8))
        with in_thread(server.app()) as url:
            yield url
    finally:
        deregister(GAME_TOOL)


def test_ors_client_lists_and_plays_gem_serve_as_in_process(served):
    url = served
    with ORS(base_url=url) as client:
        game = client.environment(GAME)
        assert game.list_splits() == ["train", "test"]
        assert game.num_tasks("train") == 8
        assert [t.task_spec for t in game.list_tasks("train")][:2] == [{"env_id": GAME, "seed": 0},
                                                                      {"env_id": GAME, "seed": 1}]
        assert game.get_task("test", 3).task_spec == {"env_id": GAME, "seed": TEST_SEEDS_FROM + 3}
        assert [tool.name for tool in game.list_tools()] == ["step"]
        assert sorted(t.name for t in client.environment(GAME_TOOL).list_tools()) == ["python", "step"]
        for seed in (0, 3):  # from a task (which names its environment), and by split and index
            with (game.session(task=game.get_task("train", seed)) if seed else
                  game.session(split="train", index=seed)) as session:
                assert ors_run(session, GUESSES) == direct_run(GAME, seed, GUESSES)
                with pytest.raises(ToolCallError, match="episode is finished"):
                    session.call_tool("step", {"action": r"\boxed{4}"})
        listed = httpx.get(f"{url}/list_environments").json()
        assert listed == [GAME.lower(), GAME_TOOL.lower()]  # ORS lists names in lower case


def test_a_tool_wrappers_tools_are_native_ors_tools(served):
    url = served
    with ORS(base_url=url) as client:
        math = client.environment(GAME_TOOL)
        with math.session(task=math.get_task("train", 2)) as session:
            expected = gem_core.make(GAME_TOOL)
            prompt, _ = expected.reset(seed=2)
            assert session.get_prompt()[0].text == prompt
            output = session.call_tool("python", {"code": "print(6 * 7)"})
            observation, reward, terminated, truncated, _ = expected.step("<python>\nprint(6 * 7)\n</python>")
            assert (output.blocks[0].text, output.reward, output.finished) == (observation, reward, False)
            assert output.metadata["step_count"] == 1 and output.metadata["truncated"] is False
            with pytest.raises(ToolCallError, match="python takes one argument, 'code'"):
                session.call_tool("python", {"program": "print(1)"})
            with pytest.raises(ToolCallError, match="validation error"):
                session.call_tool("step", {"act": "x"})
            expected.close()


def test_bad_requests_get_ors_errors_and_leave_other_sessions_alone(served):
    url = served
    with ORS(base_url=url) as client:
        game = client.environment(GAME)
        with game.session(task=game.get_task("train", 1)) as bystander:
            first = bystander.call_tool("step", {"action": r"\boxed{5}"})
            assert httpx.get(f"{url}/nothere/tools", follow_redirects=True).status_code == 404
            for path, body in (("tasks", {"split": "dev"}), ("task", {"split": "train", "index": 8}),
                               ("task", {"split": "train", "index": -1}), ("num_tasks", {"split": "dev"})):
                answer = httpx.post(f"{url}/{GAME}/{path}", json=body)
                assert answer.status_code == 400 and answer.json()["detail"] in ("Invalid split", "Invalid index")
            bad_specs = ({"seed": "zero"}, {"seed": 1, "level": 3}, {"env_id": GAME_TOOL, "seed": 1})
            for number, spec in enumerate(bad_specs):
                sid = f"bad-spec-{number}"
                created = httpx.post(f"{url}/create", json={"env_name": GAME, "task_spec": spec},
                                     headers={"X-Session-ID": sid})
                assert created.status_code == 200  # ors-sdk sets sessions up after answering
                prompt = httpx.get(f"{url}/{GAME}/prompt", headers={"X-Session-ID": sid})
                assert prompt.status_code == 400 and "task" in prompt.json()["detail"]
            unknown = httpx.post(f"{url}/{GAME}/call", json={"name": "step", "input": {"action": "x"}},
                                 headers={"X-Session-ID": "no-such-session"})
            assert unknown.status_code == 404 and unknown.json()["detail"] == "Active environment not found"
            assert httpx.post(f"{url}/create", json={"env_name": GAME, "split": "train"},
                              headers={"X-Session-ID": "s"}).status_code == 422
            with pytest.raises(ToolCallError, match="not a valid tool"):
                bystander.call_tool("python", {"code": "1"})
            second = bystander.call_tool("step", {"action": r"\boxed{3}"})  # the episode went on untouched
            assert (first.metadata["step_count"], second.metadata["step_count"]) == (1, 2)


def test_the_token_guards_ors_too():
    server = EnvServer(lambda: gem_core.make(GAME), GAME, token="s3cret", ors=OrsService([GAME]))
    with in_thread(server.app()) as url:
        with ORS(base_url=url, api_key="s3cret") as client:
            assert client.environment(GAME).num_tasks("train") == 1000
        assert httpx.get(f"{url}/{GAME}/splits").status_code == 401
        assert httpx.get(f"{url}/{GAME}/splits", headers={"X-API-Key": "wrong"}).status_code == 401
        assert httpx.get(f"{url}/{GAME}/splits", headers={"Authorization": "Bearer s3cret"}).status_code == 200


class FailsAtTurnTwo(Env):
    """An environment whose machinery breaks on the second step."""

    def reset(self, seed=None, **options):
        super().reset(seed)
        self.turn = 0
        return f"task {seed}", {}

    def step(self, action):
        self.turn += 1
        if self.turn == 2:
            raise RuntimeError("the grader crashed")
        return "go on", 0.5, False, False, {}


@pytest.fixture
def failing_server():
    register("test:FailsAtTurnTwo-v0", FailsAtTurnTwo)
    try:
        service = OrsService(["test:FailsAtTurnTwo-v0"], max_sessions=4, tasks=4)
        server = EnvServer(FailsAtTurnTwo, "test:FailsAtTurnTwo-v0", ors=service)
        with in_thread(server.app()) as url:
            yield url
    finally:
        deregister("test:FailsAtTurnTwo-v0")


def test_an_environment_failing_mid_episode_is_an_error_and_a_failed_episode(failing_server):
    url = failing_server
    with ORS(base_url=url) as client:
        env = client.environment("test:FailsAtTurnTwo-v0")
        with env.session(split="train", index=0) as session:
            assert session.call_tool("step", {"action": "a"}).reward == 0.5
            with pytest.raises(RuntimeError, match="failed at step 2 and the episode is over: RuntimeError: the gr"):
                session.call_tool("step", {"action": "b"})
            with pytest.raises(ToolCallError, match="episode is finished"):
                session.call_tool("step", {"action": "c"})
    vec = gem_core.make_vec("ors:test:FailsAtTurnTwo-v0", 2, mode="async", base_url=url)
    try:
        episodes = gem_core.collect_episodes(vec, lambda observations: ["x"] * len(observations), 2, seed=0)
    finally:
        vec.close()
    assert [e.outcome for e in episodes] == ["failed", "failed"]
    assert all(e.failure.kind == "error" and "the grader crashed" in e.failure.error for e in episodes)


def test_gem_plays_an_ors_sdk_environment_in_a_vector_env():
    def policy(observations):
        actions = []
        for observation in observations:
            a, b = [int(word) for word in observation.replace("?", " ").split() if word.isdigit()][:2]
            actions.append(f'<tool_call>{{"name": "answer", "arguments": {{"value": "{a + b}"}}}}</tool_call>')
        return actions

    with in_thread(ors_peer.app()) as url:
        env = gem_core.make("ors:SumTask", base_url=url)
        try:
            prompt, info = env.reset(seed=1)
            assert prompt.startswith("What is 10 + 32?") and info["tools"] == ["answer", "calculator"]
            assert info["task"] == {"a": 10, "b": 32}
            observation, reward, terminated, truncated, info = env.step("42")  # names no tool
            assert (reward, terminated, info["format_error"]) == (0.0, False, True)
            assert "answer, calculator" in observation
            call = '<tool_call>{"name": "calculator", "arguments": {"expression": "10+32"}}</tool_call>'
            assert env.step(call)[:4] == ("42", 0.0, False, False)
            wrong = env.step('<tool_call>{"name": "calculator", "arguments": {"expr": "1"}}</tool_call>')
            assert wrong[4]["format_error"] and "validation error" in wrong[0]
            assert env.step(policy([prompt])[0])[:4] == ("correct", 1.0, True, False)
        finally:
            env.close()
        vec = gem_core.make_vec("ors:SumTask", 3, mode="async", base_url=url)
        try:
            episodes = gem_core.collect_episodes(vec, policy, 6, seed=0)
        finally:
            vec.close()
    assert sorted(e.seed for e in episodes) == list(range(6))
    assert [e.rewards for e in episodes] == [[1.0]] * 6 and all(e.outcome == "completed" for e in episodes)


def test_gem_serve_ors_dying_mid_episode_fails_the_episode_without_a_hang():
    with gem_serve(GAME, "--ors", "--ors-env", "game:GuessTheNumber-v0-h*", "--ors-tasks", "5") as (url, process):
        with ORS(base_url=url) as client:
            assert client.environment(GAME).num_tasks("test") == 5
        assert httpx.get(f"{url}/list_environments").json() == [GAME.lower(), "game:guessthenumber-v0-hard"]
        env = gem_core.make(f"ors:{GAME}", base_url=url, timeout=5)
        env.reset(seed=0)
        assert env.step(r"\boxed{5}")[1] == 0.0
        process.kill()
        process.wait(10)
        started = time.monotonic()
        with pytest.raises(OrsEnvError, match=f"ors:{GAME} at {url}"):
            env.step(r"\boxed{3}")
        assert time.monotonic() - started < 30
        env.close()


def test_unreachable_servers_and_wrong_names_are_clear_errors(served):
    url = served
    with pytest.raises(gem_core.GemError, match="is 'nothere' one of its environments"):
        gem_core.make("ors:nothere", base_url=url)
    with pytest.raises(gem_core.GemError, match="has no split 'dev'; its splits are: train, test"):
        gem_core.make(f"ors:{GAME}", base_url=url, split="dev")
    with pytest.raises(gem_core.GemError, match="needs the server's address"):
        gem_core.make(f"ors:{GAME}")


def test_which_ids_are_served():
    ids, skipped = servable_ids(["game:GuessTheNumber-v0*", GAME])
    assert GAME in ids and all(i.startswith("game:GuessTheNumber-v0") for i in ids)
    ids, skipped = servable_ids(["multiagent:*"])
    assert any("multi-agent" in reason for reason in skipped.values())
    with pytest.raises(gem_core.GemError, match="Unknown environment id"):
        servable_ids(["game:NoSuchGame-v0"])

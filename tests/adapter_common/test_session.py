"""EnvSession: one episode driven by text, as every adapter's rollout code drives it."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import time

import pytest

import gem_core
from gem_adapters.common.options import EpisodeOptions
from gem_adapters.common.session import EnvSession
from gem_core import Env, GemError, UnknownEnvError
from gem_core.episodes import FAILURE_KINDS
from gem_core.errors import SandboxFailure

EASY = "game:GuessTheNumber-v0-easy"


@pytest.fixture(autouse=True, scope="module")
def test_envs():
    """The module's environments, registered as a user's would be."""
    ids = {"test:Closable-v0": Closable, "test:Hangs-v0": Hangs}
    for env_id, cls in ids.items():
        gem_core.register(env_id, cls)
    yield
    for env_id in ids:
        gem_core.registry.deregister(env_id)


def play(session: EnvSession, actions: list[str]):
    async def run():
        observations = [await session.reset()]
        outcomes = []
        for action in actions:
            outcome = await session.step(action)
            outcomes.append(outcome)
            observations.append(outcome.observation)
            if outcome.done:
                break
        return observations, outcomes

    with session:
        return asyncio.run(run())


def test_a_session_plays_the_environment_as_gem_core_does():
    import gem_core

    actions = [f"\\boxed{{{guess}}}" for guess in range(1, 11)]
    observations, outcomes = play(EnvSession.start(EASY, 7), actions)
    env = gem_core.make(EASY)
    first, info = env.reset(seed=7)
    expected = [f"{first}\n{info['suffix']}"]  # the game's reminder, as the agent sees it
    for action, outcome in zip(actions, outcomes):
        observation, reward, terminated, truncated, info = env.step(action)
        expected.append(observation if terminated or truncated else f"{observation}\n{info['suffix']}")
        assert outcome.reward == reward
        if terminated or truncated:
            assert outcome.stop == ("terminated" if terminated else "truncated")
            break
        assert outcome.stop is None
    assert observations == expected
    assert outcomes[-1].done and len(outcomes) == len(expected) - 1


def test_max_turns_stops_the_episode():
    session = EnvSession.start(EASY, 0, EpisodeOptions(max_turns=2))
    _, outcomes = play(session, ["\\boxed{1}"] * 5)  # seed 0's number is higher than 1
    assert [o.stop for o in outcomes] == [None, "max_turns"]
    assert session.turns == 2 and not session.terminated


def test_metrics_count_the_episode_as_gem_train_does():
    from gem_core.episodes import Episode, Turn, episode_stats

    cases = {"won": (7, [f"\\boxed{{{guess}}}" for guess in range(1, 11)]), "format error": (7, ["no guess"]),
             "cut": (0, ["\\boxed{1}"])}
    for name, (seed, actions) in cases.items():
        session = EnvSession.start(EASY, seed, EpisodeOptions(max_turns=1 if name == "cut" else None))
        _, outcomes = play(session, actions)
        episode = Episode(EASY, seed, [Turn("", a, o.reward, o.stop == "terminated", o.stop == "truncated", o.info)
                                       for a, o in zip(actions, outcomes)])
        stats = episode_stats([episode])
        metrics = session.metrics()
        assert {key: metrics[key] for key in ("turns", "terminated", "success", "format_error")} == {
            "turns": len(outcomes), "terminated": float(session.terminated),
            "success": stats["success_rate"], "format_error": stats["format_error_rate"]}, name
        assert metrics["failed"] == stats["failed_rate"] == 0.0
    assert session.metrics() == {"turns": 1.0, "terminated": 0.0, "success": 0.0, "format_error": 0.0, "failed": 0.0,
                                 **{f"failed_{kind}": 0.0 for kind in FAILURE_KINDS}}


class FailingStep(Env):
    def reset(self, seed=None, **options):
        super().reset(seed)
        return "go", {}

    def step(self, action):
        if action == "boom":
            raise RuntimeError("disk on fire")
        if action == "sandbox":
            raise SandboxFailure("the container exited")
        if action == "nan":
            return "again", float("nan"), False, False, {}
        if action == "garbage":
            return "just a string"
        return "again", 0.5, False, False, {}


class FailingReset(FailingStep):
    calls: list = []

    def reset(self, seed=None, **options):
        FailingReset.calls.append(seed)
        raise OSError("no such puzzle")


@pytest.mark.parametrize("action, kind, error", [
    ("boom", "error", "RuntimeError: disk on fire"),
    ("sandbox", "sandbox", "SandboxFailure: the container exited"),
    ("nan", "malformed", "a reward of nan"),
    ("garbage", "malformed", "must return (observation, reward, terminated, truncated, info)"),
])
def test_a_step_the_environment_breaks_fails_the_episode(caplog, action, kind, error):
    env = FailingStep()
    session = EnvSession(env, "test:FailingStep", 3, EpisodeOptions())
    with caplog.at_level(logging.ERROR, logger="gem_adapters"):
        _, outcomes = play(session, ["fine", action, "never"])
    assert [o.stop for o in outcomes] == [None, "failed"]
    assert [o.reward for o in outcomes] == [0.5, 0.0] and session.rewards == [0.5, 0.0]
    assert (session.failure.kind, session.failure.phase, session.failure.turn) == (kind, "step", 1)
    assert error in session.failure.error and error in outcomes[-1].observation and not session.terminated
    assert "test:FailingStep" in caplog.text and "turn 2" in caplog.text
    assert session.metrics()["failed"] == 1.0 and session.metrics()[f"failed_{kind}"] == 1.0


def test_a_reset_that_keeps_failing_is_retried_with_other_seeds_then_fails_the_episode(caplog):
    FailingReset.calls = []
    session = EnvSession(FailingReset(), "test:FailingReset", 5, EpisodeOptions())
    with caplog.at_level(logging.WARNING, logger="gem_adapters"):
        observations, outcomes = play(session, ["anything", "more"])
    assert len(FailingReset.calls) == 3 and FailingReset.calls[0] == 5 and len(set(FailingReset.calls)) == 3
    assert "no such puzzle" in observations[0]
    assert [o.stop for o in outcomes] == ["failed"] and session.rewards == [0.0]
    assert (session.failure.kind, session.failure.phase, session.failure.turn) == ("error", "reset", 0)
    assert caplog.text.count("failed to reset") == 3 and "fails and is left out of training" in caplog.text


class Closable(FailingStep):
    made: list = []

    def __init__(self):
        Closable.made.append(self)
        self.closed = False

    def close(self):
        self.closed = True


def test_a_failure_closes_the_environment_at_once_and_the_next_episode_gets_a_fresh_one():
    Closable.made = []
    session = EnvSession.start("test:Closable-v0", 1)
    with session:
        asyncio.run(session.reset())
        first = Closable.made[-1]
        asyncio.run(session.step("sandbox"))
        assert first.closed and session.failure.kind == "sandbox"
        asyncio.run(session.reset())
        assert session.failure is None and session.stop is None and session.rewards == []
        assert len(Closable.made) == 2 and session.env.unwrapped is Closable.made[-1] and not Closable.made[-1].closed
        assert asyncio.run(session.step("fine")).reward == 0.5
    without_factory = EnvSession(Closable(), "test:Closable-v0", 1, EpisodeOptions())
    asyncio.run(without_factory.reset())
    asyncio.run(without_factory.step("boom"))
    asyncio.run(without_factory.reset())  # cannot make another: this episode fails too, and says why
    assert without_factory.failure.phase == "reset" and "cannot make another" in without_factory.failure.error


class Hangs(Env):
    """A tool that runs a process and waits for it: the process is what a sandbox would be."""

    processes: list = []

    def reset(self, seed=None, **options):
        super().reset(seed)
        return "go", {}

    def step(self, action):
        if action == "hang":
            process = subprocess.Popen(["sleep", "60"])
            Hangs.processes.append(process)
            process.wait()
            return "woke", 0.0, False, False, {}
        return "again", 1.0, False, False, {}

    def close(self):
        for process in Hangs.processes:
            process.kill()


def test_an_environment_call_past_the_deadline_fails_the_episode_and_what_it_runs_dies():
    Hangs.processes = []
    session = EnvSession.start("test:Hangs-v0", 0, EpisodeOptions(episode_deadline=0.5))
    started = time.monotonic()
    with session:
        _, outcomes = play(session, ["fine", "hang", "never"])
        elapsed = time.monotonic() - started
        assert [o.stop for o in outcomes] == [None, "failed"] and elapsed < 5
        assert (session.failure.kind, session.failure.phase, session.failure.turn) == ("deadline", "step", 1)
        assert "deadline of 0.5 s" in session.failure.error
        Hangs.processes[0].wait(timeout=5)  # killed when the session closed the environment, not after 60 s
        assert Hangs.processes[0].returncode is not None


def test_sampling_past_the_deadline_fails_the_episode_in_the_policy_phase():
    async def slow_library(session):
        await session.reset()
        await session.step("fine")
        await asyncio.sleep(30)  # a generation that hangs

    session = EnvSession.start("test:Hangs-v0", 0, EpisodeOptions(episode_deadline=0.3))
    with session:
        started = time.monotonic()
        assert asyncio.run(session.within_deadline(slow_library(session))) is None
        assert time.monotonic() - started < 5
        assert (session.failure.kind, session.failure.phase, session.failure.turn) == ("deadline", "policy", 1)
        assert session.stop == "failed" and session.metrics()["failed_deadline"] == 1.0

    # a library that generates on its own: the step asked for after the deadline ends the episode
    session = EnvSession.start("test:Hangs-v0", 0, EpisodeOptions(episode_deadline=0.2))
    with session:
        asyncio.run(session.reset())
        time.sleep(0.3)
        outcome = asyncio.run(session.step("fine"))
        assert outcome.stop == "failed" and session.failure.phase == "policy" and session.rewards == [0.0]
        asyncio.run(session.reset())  # the next episode has its own clock and a fresh environment
        assert asyncio.run(session.step("fine")).reward == 1.0 and session.failure is None


def test_within_the_deadline_the_episode_plays_as_without_one():
    async def library(session):
        await session.reset()
        return [await session.step("fine") for _ in range(2)]

    with EnvSession.start("test:Hangs-v0", 0, EpisodeOptions(episode_deadline=30)) as session:
        outcomes = asyncio.run(session.within_deadline(library(session)))
    assert [o.reward for o in outcomes] == [1.0, 1.0] and session.failure is None


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), "10", True])
def test_a_deadline_that_is_not_a_positive_number_of_seconds_is_refused(value):
    with pytest.raises(GemError, match="gem.episode_deadline must be a positive number of seconds"):
        EpisodeOptions.from_config({"episode_deadline": value})
    assert EpisodeOptions.from_config({"episode_deadline": 90}).episode_deadline == 90.0
    assert EpisodeOptions.from_config(EpisodeOptions(episode_deadline=2.5).to_config()).episode_deadline == 2.5


def test_configuration_mistakes_raise_before_any_episode():
    with pytest.raises(UnknownEnvError):
        EnvSession.start("game:GuesTheNumber-v0", 0)
    with pytest.raises(GemError, match="concat_chat"):
        EnvSession.start(EASY, 0, EpisodeOptions.from_config({"wrappers": "concat_chat"}))


def test_keywords_reach_the_environment_and_unknown_ones_raise():
    session = EnvSession.start(EASY, 3, max_number=2, max_turns=1)
    with session:
        assert session.env.unwrapped.fixed_max_turns == 1
    with pytest.raises(GemError, match="max_numbr"):
        EnvSession.start(EASY, 0, max_numbr=2)


def test_a_session_plays_episodes_one_after_the_other():
    async def episode(session):
        observation = await session.reset()
        return observation, await session.step("\\boxed{1}")

    with EnvSession.start(EASY, 5) as fresh:
        expected = asyncio.run(fresh.reset())
    with EnvSession.start(EASY, 0, EpisodeOptions(max_turns=1)) as session:
        asyncio.run(episode(session))
        assert session.stop is not None
        session.seed = 5
        observation, outcome = asyncio.run(episode(session))
    assert observation == expected and session.turns == 1 and outcome.done


def test_a_board_game_shows_its_board_every_turn():
    session = EnvSession.start("game:Sudoku-v0-easy", 1)
    observations, outcomes = play(session, ["\\boxed{r1c1 9}"])
    assert "Here is the grid" in observations[0]
    assert outcomes[0].done or "Here is the grid" in observations[1]


def test_the_env_pool_option_is_checked_without_ray_and_names_the_shared_pool():
    options = EpisodeOptions.from_config({"env_pool": {"address": "auto", "hosts": 3}})
    assert options.env_pool == {"name": "gem", "address": "auto", "hosts": 3}
    assert EpisodeOptions.from_config(options.to_config()) == options  # written configs read back
    assert EpisodeOptions().env_pool is None and EpisodeOptions().to_config()["env_pool"] is None
    with pytest.raises(GemError, match="gem.env_pool: Unknown Ray pool option.*hots"):
        EpisodeOptions.from_config({"env_pool": {"hots": 3}})
    with pytest.raises(GemError, match="gem.env_pool: hosts must be a positive integer"):
        EpisodeOptions.from_config({"env_pool": {"hosts": 0}})
    with pytest.raises(GemError, match="gem.env_pool must be a mapping"):
        EpisodeOptions.from_config({"env_pool": "auto"})


def test_a_session_plays_its_episode_on_the_pool(ray_cluster, monkeypatch):
    from gem_adapters.common import session as session_module
    from gem_core.vector.ray_pool import shutdown_pool

    def made_here(*args, **kwargs):
        raise AssertionError("the environment was made in this process")

    local = EnvSession.start("game:GuessTheNumber-v0-easy", 3, EpisodeOptions(max_turns=3))
    monkeypatch.setattr(session_module, "make", made_here)
    options = EpisodeOptions.from_config({"max_turns": 3, "env_pool": {"hosts": 2, "name": "session-tests"}})
    try:
        with local, EnvSession.start("game:GuessTheNumber-v0-easy", 3, options) as pooled:
            async def play(session):
                first = await session.reset()
                return first, [await session.step(f"\\boxed{{{guess}}}") for guess in (2, 9, 4)]
            assert asyncio.run(play(pooled)) == asyncio.run(play(local))
            assert pooled.stop == local.stop and pooled.rewards == local.rewards
    finally:
        shutdown_pool("session-tests", 2)

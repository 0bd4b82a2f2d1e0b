"""EnvSession: one episode driven by text, as every adapter's rollout code drives it."""

from __future__ import annotations

import asyncio
import logging

import pytest

from gem_adapters.common.options import EpisodeOptions
from gem_adapters.common.session import EnvSession
from gem_core import Env, GemError, UnknownEnvError

EASY = "game:GuessTheNumber-v0-easy"


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
        assert session.metrics() == {"turns": len(outcomes), "terminated": float(session.terminated),
                                     "success": stats["success_rate"], "format_error": stats["format_error_rate"]}, name
    assert session.metrics() == {"turns": 1.0, "terminated": 0.0, "success": 0.0, "format_error": 0.0}


class FailingStep(Env):
    def reset(self, seed=None, **options):
        super().reset(seed)
        return "go", {}

    def step(self, action):
        if action == "boom":
            raise RuntimeError("disk on fire")
        return "again", 0.5, False, False, {}


class FailingReset(FailingStep):
    calls: list = []

    def reset(self, seed=None, **options):
        FailingReset.calls.append(seed)
        raise OSError("no such puzzle")


def test_an_environment_raising_in_step_ends_the_episode_truncated(caplog):
    session = EnvSession(FailingStep(), "test:FailingStep", 3, EpisodeOptions())
    with caplog.at_level(logging.ERROR, logger="gem_adapters"):
        _, outcomes = play(session, ["fine", "boom", "never"])
    assert [o.stop for o in outcomes] == [None, "env_error"]
    assert [o.reward for o in outcomes] == [0.5, 0.0] and session.rewards == [0.5, 0.0]
    assert "disk on fire" in outcomes[-1].observation and not session.terminated
    assert "test:FailingStep" in caplog.text and "turn 2" in caplog.text


def test_a_reset_that_keeps_failing_is_retried_with_other_seeds_then_ends_at_the_first_step(caplog):
    FailingReset.calls = []
    session = EnvSession(FailingReset(), "test:FailingReset", 5, EpisodeOptions())
    with caplog.at_level(logging.ERROR, logger="gem_adapters"):
        observations, outcomes = play(session, ["anything", "more"])
    assert len(FailingReset.calls) == 3 and FailingReset.calls[0] == 5 and len(set(FailingReset.calls)) == 3
    assert "no such puzzle" in observations[0]
    assert [o.stop for o in outcomes] == ["env_error"] and session.rewards == [0.0]
    assert caplog.text.count("failed to reset") == 3


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

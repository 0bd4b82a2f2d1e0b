"""The single-agent and multi-agent bases are apart: a MultiAgentEnv is not an Env, the seats
views (self_play, versus) are the Env bridge, both share BaseEnv's seeding and lifecycle, and
single-agent code given a multi-agent environment says which view to use."""

from __future__ import annotations

import random

import pytest

import gem_core
from gem_core.core import BaseEnv, GlobalRandomWarning, Wrapper
from gem_core.errors import GemError, SingleAgentRequiredError
from gem_core.multiagent import MultiAgentEnv, is_multiagent
from gem_core.wrappers import HistoryWrapper
from gem_core.wrappers.seats import SelfPlay, Versus, self_play, versus
from tests.helpers import gem_command


def test_a_multi_agent_env_is_not_an_env_and_its_views_are():
    game = gem_core.make("multiagent:Nim-v0")
    assert not issubclass(MultiAgentEnv, gem_core.Env) and not isinstance(game, gem_core.Env)
    assert isinstance(game, MultiAgentEnv) and isinstance(game, BaseEnv) and is_multiagent(game)
    for view in (self_play(game), versus(game, seat="player_1")):
        assert isinstance(view, gem_core.Env) and not isinstance(view, Wrapper) and not is_multiagent(view)
        assert view.env is game and view.unwrapped is game and view.spec.id == "multiagent:Nim-v0"
    for env_id, kind in (("multiagent:Nim-v0-selfplay", SelfPlay), ("multiagent:Nim-v0-vs-bot", Versus)):
        view = gem_core.make(env_id)
        assert isinstance(view, kind) and isinstance(view.env, MultiAgentEnv)
        observation, info = view.reset(seed=0)
        assert isinstance(observation, str) and "Nim" in observation


def test_a_view_steps_in_a_vector_env_through_a_wrapper_chain():
    with gem_core.make_vec("multiagent:TicTacToe-v0", 2, wrappers="self_play,concat") as vec_env:
        observations, infos = vec_env.reset(seed=0)
        observations, rewards, terminated, truncated, infos = vec_env.step(["\\boxed{5}", "\\boxed{1}"])
    assert [info["agent"] for info in infos] == ["player_0", "player_0"]
    assert not terminated.any() and infos[0]["next_agent"] == "player_1"


def test_both_bases_seed_their_generators_alike_from_reset():
    game, env = gem_core.make("multiagent:Nim-v0"), gem_core.make("game:GuessTheNumber-v0-easy")
    for made in (game, env):
        made.reset(seed=7)
        state = made.rng.getstate()
        assert made.action_rng.random() == random.Random("7/actions").random()  # apart from rng
        made.reset(seed=7)
        assert made.rng.getstate() == state
        made.reset()  # no seed: the generators go on
        assert made.rng.getstate() != state
    game.reset(seed=7)
    assert game.bot_rng.random() == random.Random("7/bots").random()


def test_both_bases_clone_close_and_work_as_context_managers():
    with gem_core.make("multiagent:Nim-v0") as game:
        game.reset(seed=0)
        twin = game.clone()
        assert type(twin) is type(game) and twin is not game
        (agent,) = game.active_agents
        move = game.random_action(agent)
        game.step({agent: move})
        assert twin.active_agents == [agent] and twin.observe(agent) != game.observe(agent)
        twin.close()
        twin.close()


def test_a_multi_agent_subclass_is_watched_for_global_randomness():
    class GlobalCoin(MultiAgentEnv):
        possible_agents = ["a", "b"]

        def start(self) -> None:
            self.side = random.choice("HT")  # the global generator: not replayed by the seed

        def observe(self, agent: str) -> str:
            return self.side

        def _process_actions(self, actions):
            return {}, {}, {}, {}, {}

    with pytest.warns(GlobalRandomWarning, match="GlobalCoin.start"):
        GlobalCoin().reset(seed=0)


@pytest.mark.parametrize("give", [
    lambda: gem_core.make_vec("multiagent:Nim-v0", 1),
    lambda: gem_core.make_vec("multiagent:Nim-v0", 1, wrappers="concat"),
    lambda: HistoryWrapper(gem_core.make("multiagent:Nim-v0")),
    lambda: gem_core.check_env("multiagent:Nim-v0", steps=2),
], ids=["make_vec", "make_vec-with-a-chain", "a-wrapper", "check_env"])
def test_single_agent_code_given_a_multi_agent_env_names_the_views(give):
    with pytest.raises(SingleAgentRequiredError, match="multiagent:Nim-v0 is a multi-agent environment.*"
                                                       "self_play or versus.*check_multiagent_env"):
        give()


def test_the_views_and_the_multi_agent_checker_refuse_a_single_agent_env():
    env = gem_core.make("game:GuessTheNumber-v0-easy")
    for view in (self_play, versus):
        with pytest.raises(GemError, match="goes directly on a multi-agent environment"):
            view(env)
    with pytest.raises(GemError, match="not a MultiAgentEnv: check it with check_env"):
        gem_core.check_multiagent_env(env)
    with pytest.raises(GemError, match="samples per agent"):
        gem_core.make("multiagent:Nim-v0").sample_random_action()


def test_gem_eval_on_a_raw_multi_agent_id_is_a_clear_error(tmp_path):
    # The endpoint is never reached: the environments are refused first.
    result = gem_command("eval", "--env", "multiagent:Nim-v0", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                         "--episodes", "1", "--output-dir", str(tmp_path))
    assert result.returncode != 0
    assert "multi-agent environment" in result.stderr and "self_play or versus" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_the_trainer_refuses_a_raw_multi_agent_id_before_it_loads_a_model():
    from gem_trainer.config import TrainConfig, validate

    assert gem_core.is_multiagent("multiagent:Nim-v0") and not gem_core.is_multiagent("multiagent:Nim-v0-selfplay")
    assert not gem_core.is_multiagent(gem_core.spec("game:GuessTheNumber-v0-easy"))
    with pytest.raises(SingleAgentRequiredError, match="multiagent:Nim-v0 is a multi-agent environment, and gem train"):
        validate(TrainConfig(envs=["game:GuessTheNumber-v0-easy", "multiagent:Nim-v0"]))
    validate(TrainConfig(envs=["multiagent:Nim-v0-selfplay"]))


@pytest.mark.parametrize("env_id", ["multiagent:Nim-v0", "multiagent:Nim-v0-selfplay"])
def test_gem_check_checks_either_kind(env_id):
    result = gem_command("check", env_id, "--steps", "5")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "keeps the environment contract" in result.stdout

"""Every multi-agent game: random play ends within the turn limit, zero-sum games sum to zero, a
seed replays, malformed actions get the documented penalty, and the scripted bot beats random."""

from __future__ import annotations

import pytest

import gem_core

GAMES = ("TicTacToe", "Nim", "KuhnPoker", "PrisonersDilemma", "LiarsDice")
ZERO_SUM = ("TicTacToe", "Nim", "KuhnPoker")


def random_game(name: str, seed: int) -> tuple[dict[str, float], list[str], int]:
    """Play one game with random actions for every agent: cumulative rewards, the transcript, and
    the number of steps."""
    env = gem_core.make(f"multiagent:{name}-v0")
    observations, _ = env.reset(seed=seed)
    transcript, steps = [observations[env.possible_agents[0]]], 0
    while env.agents:
        actions = {agent: env.random_action(agent) for agent in env.active_agents}
        observations, *_ = env.step(actions)
        transcript += sorted(actions.values())
        steps += 1
        assert steps <= env.max_turns
    return env.cumulative_rewards, transcript, steps


@pytest.mark.parametrize("name", GAMES)
def test_random_play_ends_within_the_turn_limit_and_replays_with_its_seed(name):
    for seed in range(20):
        rewards, transcript, _ = random_game(name, seed)
        assert random_game(name, seed) == (rewards, transcript, random_game(name, seed)[2])
        if name in ZERO_SUM:
            assert sum(rewards.values()) == 0


@pytest.mark.parametrize("name", GAMES)
def test_every_player_leaves_with_an_outcome(name):
    env = gem_core.make(f"multiagent:{name}-v0")
    env.reset(seed=4)
    outcomes = {}
    while env.agents:
        actions = {agent: env.random_action(agent) for agent in env.active_agents}
        _, _, terminations, truncations, infos = env.step(actions)
        for agent, info in infos.items():
            if terminations.get(agent) or truncations.get(agent):
                outcomes[agent] = info["outcome"]
    assert set(outcomes) == set(env.possible_agents)
    assert set(outcomes.values()) <= {"win", "loss", "draw"}


@pytest.mark.parametrize(("name", "reward"), [("TicTacToe", -1.0), ("Nim", -1.0), ("KuhnPoker", -1.0)])
@pytest.mark.parametrize("action", ["", "I pass", "\\boxed{}", "\\boxed{" + "9" * 500 + "}"])
def test_a_malformed_move_forfeits_a_two_player_game(name, reward, action):
    env = gem_core.make(f"multiagent:{name}-v0")
    env.reset(seed=0)
    (agent,) = env.active_agents
    _, rewards, terminations, _, infos = env.step({agent: action})
    assert rewards[agent] == reward and sum(rewards.values()) == 0 and all(terminations.values())
    assert infos[agent].get("format_error") or infos[agent].get("invalid_move")
    assert env.agents == []


def test_an_illegal_move_is_told_apart_from_a_malformed_one():
    env = gem_core.make("multiagent:TicTacToe-v0")
    env.reset(seed=0)
    env.step({"player_0": "\\boxed{5}"})
    _, rewards, _, _, infos = env.step({"player_1": "\\boxed{5}"})  # taken
    assert infos["player_1"] == {"invalid_move": True, "outcome": "loss"} and rewards["player_1"] == -1.0


def test_a_malformed_move_in_the_prisoners_dilemma_is_a_costly_defection():
    env = gem_core.make("multiagent:PrisonersDilemma-v0")
    env.reset(seed=0)
    _, rewards, *_ , infos = env.step({"player_0": "hmm", "player_1": "\\boxed{cooperate}"})
    assert rewards == {"player_0": 5.0 - 1.0, "player_1": 0.0} and infos["player_0"]["format_error"]


def test_a_malformed_move_in_liars_dice_costs_a_die_and_the_game_goes_on():
    env = gem_core.make("multiagent:LiarsDice-v0")
    env.reset(seed=0)
    _, _, terminations, _, infos = env.step({"player_0": "\\boxed{liar}"})  # no bid to call yet
    assert infos["player_0"]["invalid_move"] and not any(terminations.values())
    assert len(env.dice["player_0"]) == 1 and env.active_agents == ["player_0"]  # the loser starts again


def test_liars_dice_eliminates_players_until_one_is_left():
    env = gem_core.make("multiagent:LiarsDice-v0", players=4, dice=1)
    env.reset(seed=2)
    order = []
    while env.agents:
        (agent,) = env.active_agents
        _, rewards, terminations, _, infos = env.step({agent: env.random_action(agent)})
        order += [a for a, done in terminations.items() if done]
    assert len(order) == 4 and env.cumulative_rewards[order[-1]] == 1.0
    assert sorted(env.cumulative_rewards.values()) == [-1.0, -1.0, -1.0, 1.0]


@pytest.mark.parametrize(("name", "least"), [("TicTacToe", 0.7), ("Nim", 0.7), ("LiarsDice", 0.5),
                                             ("KuhnPoker", 0.4)])
def test_the_scripted_bot_beats_random_play(name, least):
    env = gem_core.make(f"multiagent:{name}-v0-vs-bot")
    wins = losses = 0
    for seed in range(60):
        env.reset(seed=seed)
        done = False
        while not done:
            _, _, terminated, truncated, info = env.step(env.sample_random_action())
            done = terminated or truncated
        wins += info["outcome"] == "win"
        losses += info["outcome"] == "loss"
    assert losses / 60 >= least, (wins, losses)  # the random policy loses to the bot


def test_the_prisoners_dilemma_bot_plays_tit_for_tat():
    from gem_core.wrappers.seats import Versus

    env = Versus(gem_core.make("multiagent:PrisonersDilemma-v0"), seat="player_0")
    observation, _ = env.reset(seed=0)
    moves = ["defect", "cooperate", "cooperate", "defect", "defect"]
    for move in moves:
        observation, *_ = env.step(f"\\boxed{{{move}}}")
    bot = [line.split("opponent ")[1] for line in observation.splitlines() if line.startswith("round ")]
    assert bot == ["cooperate", *moves[:-1]]  # it opens kindly, then answers in kind


def test_a_person_can_play_against_the_bot_with_gem_play():
    from tests.helpers import gem_command

    result = gem_command("play", "multiagent:TicTacToe-v0-vs-bot", "--seed", "0",
                         input="\\boxed{5}\n\\boxed{1}\n\\boxed{9}\n\\boxed{3}\n\\boxed{7}\n/quit\n")
    assert result.returncode == 0, result.stderr
    assert "You play" in result.stdout and "The game is over for you" in result.stdout


def test_gem_play_on_a_raw_multi_agent_id_names_the_playable_ones():
    from tests.helpers import gem_command

    result = gem_command("play", "multiagent:Nim-v0", input="/quit\n")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "multiagent:Nim-v0-vs-bot" in result.stderr

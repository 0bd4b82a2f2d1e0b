"""The multi-agent API: both selector modes, action validation, agent removal, cumulative rewards,
messages and reset; and the single-agent views' per-agent credit through ReBN."""

from __future__ import annotations

import pytest

import gem_core
from gem_core import AgentSelector, GemError, MultiAgentEnv
from gem_core.episodes import Episode, Turn
from gem_core.multiagent import MultiAgentError, split_by_agent
from gem_core.wrappers.seats import SelfPlay, Versus


class Counting(MultiAgentEnv):
    """Three agents; each action ``"+N"`` gives its agent N points, ``"stop"`` ends that agent,
    ``"cut"`` truncates everyone."""

    def __init__(self, mode: str = "sequential"):
        super().__init__()
        self.possible_agents = ["a0", "a1", "a2"]
        self.mode = mode

    def start(self) -> None:
        self.steps = 0

    def observe(self, agent: str) -> str:
        return f"{agent} at step {self.steps}"

    def _process_actions(self, actions):
        self.steps += 1
        rewards = {agent: float(action[1:]) if action.startswith("+") else 0.0 for agent, action in actions.items()}
        terminations = {agent: action == "stop" for agent, action in actions.items()}
        truncations = {agent: any(a == "cut" for a in actions.values()) for agent in self.agents}
        return ({a: self.observe(a) for a in self.agents}, rewards, terminations, truncations,
                {a: {"seen": True} for a in actions})


def test_sequential_mode_takes_turns_round_robin():
    env = Counting("sequential")
    observations, infos = env.reset(seed=0)
    assert set(observations) == {"a0", "a1", "a2"} and observations["a1"] == "a1 at step 0"
    order = []
    for _ in range(4):
        (agent,) = env.active_agents
        order.append(agent)
        env.step({agent: "+1"})
    assert order == ["a0", "a1", "a2", "a0"]


def test_parallel_mode_takes_every_agent_at_once():
    env = Counting("parallel")
    env.reset()
    assert env.active_agents == ["a0", "a1", "a2"]
    _, rewards, *_ = env.step({"a0": "+1", "a1": "+2", "a2": "+3"})
    assert rewards == {"a0": 1.0, "a1": 2.0, "a2": 3.0}


@pytest.mark.parametrize(("mode", "actions", "message"), [
    ("sequential", {"a1": "+1"}, "Missing action for active agent"),
    ("sequential", {"a0": "+1", "a1": "+1"}, "a1 sent an action but are not active"),
    ("parallel", {"a0": "+1", "a1": "+1"}, "Missing action for active agent.*a2"),
])
def test_actions_must_match_the_active_agents(mode, actions, message):
    env = Counting(mode)
    env.reset()
    with pytest.raises(MultiAgentError, match=message):
        env.step(actions)
    with pytest.raises(ValueError):  # as in gem-llm
        env.step("not a dict")


def test_finished_agents_leave_and_the_turn_passes_on():
    env = Counting("sequential")
    env.reset()
    env.step({"a0": "+1"})
    env.step({"a1": "stop"})
    assert env.agents == ["a0", "a2"] and env.active_agents == ["a2"]
    env.step({"a2": "cut"})
    assert env.agents == [] and env.active_agents == []


def test_cumulative_rewards_are_summed_per_agent_and_kept_after_leaving():
    env = Counting("parallel")
    env.reset()
    env.step({"a0": "+2", "a1": "+1", "a2": "stop"})
    env.step({"a0": "+3", "a1": "+0"})
    assert env.cumulative_rewards == {"a0": 5.0, "a1": 1.0, "a2": 0.0}
    assert env.get_state("a0")[1] == 5.0
    with pytest.raises(GemError, match="a2"):
        env.get_state("a2")


def test_messages_between_agents():
    env = Counting()
    env.reset()
    env.send_message("a0", "a1", "hello")
    env.broadcast_message("a2", "all")
    assert env.messages_for("a1") == [{"from": "a0", "to": "a1", "message": "hello"},
                                      {"from": "a2", "to": "a1", "message": "all"}]
    with pytest.raises(GemError, match="Receiver 'zz'"):
        env.send_message("a0", "zz", "?")


def test_reset_brings_every_agent_back():
    env = Counting()
    env.reset()
    env.step({"a0": "stop"})
    env.send_message("a1", "a2", "x")
    observations, _ = env.reset()
    assert env.agents == ["a0", "a1", "a2"] and env.active_agents == ["a0"]
    assert env.shared_memory == [] and env.cumulative_rewards == {"a0": 0.0, "a1": 0.0, "a2": 0.0}


def test_selector_rotation_add_and_remove():
    selector = AgentSelector(["a", "b", "c"])
    assert selector.is_first() and selector.next() == "b"
    selector.remove_agent("b")  # the one to act leaves: the next is the one after it
    assert selector.next() == "c" and selector.is_last()
    selector.add_agent("d")
    assert selector.next() == "d" and selector.next() == "a"
    selector.remove_agent("a"), selector.remove_agent("c"), selector.remove_agent("d")
    assert selector.selected is None and selector.get_active_agents() == []
    with pytest.raises(GemError, match="sequential"):
        AgentSelector(["a"], mode="round")


def test_a_vector_env_refuses_a_raw_multi_agent_env_naming_the_views():
    with pytest.raises(GemError, match="self_play or versus"):
        gem_core.make_vec("multiagent:TicTacToe-v0", 1)


def test_self_play_credits_each_seat_with_what_it_earned_until_its_next_move():
    env = SelfPlay(gem_core.make("multiagent:TicTacToe-v0"))
    env.reset(seed=0)
    turns = []
    for cell in (1, 4, 2, 5, 3):  # X takes the top row
        observation, reward, terminated, truncated, info = env.step(f"\\boxed{{{cell}}}")
        turns.append(Turn(observation, str(cell), reward, terminated, truncated, info))
    assert terminated and [t.info["agent"] for t in turns] == ["player_0", "player_1"] * 2 + ["player_0"]
    x, o = split_by_agent(Episode("multiagent:TicTacToe-v0", 0, turns))
    assert (x.agent, x.rewards) == ("player_0", [0.0, 0.0, 1.0])
    assert (o.agent, o.rewards) == ("player_1", [0.0, -1.0])  # the loss lands on O's last move
    assert o.turns[-1].terminated

    from gem_core.estimators import rebn

    advantages = rebn([x.rewards, o.rewards], gamma=1.0)
    assert advantages[0][-1] > 0 > advantages[1][-1]


def test_versus_plays_the_bots_between_the_policys_moves():
    env = gem_core.make("multiagent:Nim-v0-vs-bot")
    observation, info = env.reset(seed=1)
    assert info["seat"] in ("player_0", "player_1") and "Your move" in observation
    done, total = False, 0.0
    while not done:
        observation, reward, terminated, truncated, info = env.step(env.sample_random_action())
        total += reward
        done = terminated or truncated
    assert info["outcome"] in ("win", "loss") and total == (1.0 if info["outcome"] == "win" else -1.0)


def test_versus_takes_given_policies_and_checks_its_options():
    moves = []

    def first_free(observation: str) -> str:
        moves.append(observation)
        return f"\\boxed{{{next(ch for ch in observation.splitlines()[1] + observation.splitlines()[2] + observation.splitlines()[3] if ch.isdigit())}}}"

    env = Versus(gem_core.make("multiagent:TicTacToe-v0"), seat="player_0", policies={"player_1": first_free})
    env.reset(seed=0)
    env.step("\\boxed{5}")
    assert moves and "player_1" in moves[0]
    with pytest.raises(GemError, match="Unknown seat"):
        Versus(gem_core.make("multiagent:TicTacToe-v0"), seat="player_9")
    with pytest.raises(GemError, match="unknown agent"):
        Versus(gem_core.make("multiagent:TicTacToe-v0"), policies={"bob": first_free})

"""Multi-agent environments: several named agents act on one shared state.

A :class:`MultiAgentEnv` has ``possible_agents`` (every seat) and ``agents`` (those still in the
game). ``reset(seed)`` returns an observation and an info per agent; ``step({agent: action})``
takes one action from each *active* agent and returns five dicts keyed by agent: observations,
rewards, terminations, truncations and infos. Which agents are active is decided by an
:class:`AgentSelector`: in ``"sequential"`` mode one agent at a time, round-robin (turn-taking
games); in ``"parallel"`` mode all agents at once (simultaneous moves). An agent whose episode
terminated or was truncated leaves ``agents`` (and the selector). ``cumulative_rewards`` sums each
agent's rewards since the reset, and agents can leave each other messages (``send_message``,
``broadcast_message``; kept in ``shared_memory``). Observations and actions are strings, as in
every GEM environment, and multi-agent environments are registered and made like any other.

The shape and meaning follow the reference implementation's ``MultiAgentEnv`` (gem-llm), and the
turn order follows PettingZoo's AEC (sequential) and Parallel APIs. To train or evaluate one
policy on a multi-agent environment, use a single-agent view (:mod:`gem_core.wrappers.seats`):
``self_play`` (one policy plays every seat) or ``versus`` (the policy plays one seat, given
policies or the environment's scripted bots the others).

Subclasses implement :meth:`start` (a new episode's state), :meth:`observe` (what an agent sees
now) and :meth:`_process_actions` (apply the active agents' actions and return the five dicts),
and draw randomness from ``self.rng`` (scripted bots from ``self.bot_rng``, random actions from
``self.action_rng``).
"""

from __future__ import annotations

import abc
import random
from collections.abc import Sequence
from typing import Any

from gem_core.core import BaseEnv
from gem_core.episodes import Episode, Turn
from gem_core.errors import GemError

MODES = ("sequential", "parallel")
AgentDicts = tuple[dict[str, str], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]]


class MultiAgentError(GemError, ValueError):
    """A multi-agent call that does not fit: actions that do not match the active agents (one
    missing, or one from an agent not to act), an agent not (or no longer) in the environment, an
    unknown selector mode. A ``ValueError``, as in gem-llm."""


class AgentSelector:
    """Which agents act next: one at a time in turn (``"sequential"``) or all at once
    (``"parallel"``). ``selected`` is the agent to act in sequential mode (None with no agents)."""

    def __init__(self, agents: Sequence[str], mode: str = "sequential"):
        if mode not in MODES:
            raise MultiAgentError(f"Unknown agent selector mode {mode!r}; choose 'sequential' or 'parallel'.")
        self.mode = mode
        self.reinit(agents)

    @property
    def agents(self) -> list[str]:
        return list(self._agents)

    def get_active_agents(self) -> list[str]:
        if self.mode == "parallel":
            return list(self._agents)
        return [self.selected] if self.selected is not None else []

    def next(self) -> str | None:
        """Move to the next agent in turn (sequential mode) and return it."""
        if self.mode == "sequential" and self._agents:
            self._index = (self._index + 1) % len(self._agents)
            self.selected = self._agents[self._index]
        return self.selected

    def select(self, agent: str) -> None:
        """Make ``agent`` the next to act (e.g. the loser of a round starts the next one)."""
        self._index = self._agents.index(agent)
        self.selected = agent

    def is_first(self) -> bool:
        return self._index == 0

    def is_last(self) -> bool:
        return self._index == len(self._agents) - 1

    def reinit(self, agents: Sequence[str]) -> None:
        self._agents = list(agents)
        self._index = 0
        self.selected = self._agents[0] if self._agents else None

    def add_agent(self, agent: str) -> None:
        if agent not in self._agents:
            self._agents.append(agent)
            if self.selected is None:
                self.selected, self._index = agent, len(self._agents) - 1

    def remove_agent(self, agent: str) -> None:
        """Take ``agent`` out of the rotation; if it was to act, the agent after it is next."""
        if agent not in self._agents:
            return
        position = self._agents.index(agent)
        self._agents.remove(agent)
        if not self._agents:
            self._index, self.selected = 0, None
            return
        if position < self._index:
            self._index -= 1
        elif position == self._index:
            self._index -= 1  # so that next() lands on the agent that followed the removed one
        self._index %= len(self._agents)
        self.selected = self._agents[self._index]


class MultiAgentEnv(BaseEnv, watched=False):
    """Base class of multi-agent environments; see the module documentation.

    Not an :class:`~gem_core.core.Env`: ``reset`` and ``step`` take and return one value per
    agent, so code written for one agent (wrappers, vector environments, episode collection,
    trainers) takes a single-agent view of it (:mod:`gem_core.wrappers.seats`). What the two
    kinds share (the spec, seeded generators, ``clone``, ``close``, ``with``) is
    :class:`~gem_core.core.BaseEnv`.
    """

    #: Agent names in seat order; subclasses set them (in ``__init__`` or as a class attribute).
    possible_agents: list[str] = []
    #: ``"sequential"`` (turn-taking) or ``"parallel"`` (simultaneous moves).
    mode: str = "sequential"
    _started = False  # set by the first reset
    _watched_methods = ("reset", "step", "start", "_process_actions")  # where subclasses draw

    def __init__(self) -> None:
        self.agents: list[str] = []
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.rewards: dict[str, float] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.agent_selector: AgentSelector | None = None
        self.shared_memory: list[dict[str, str]] = []
        self.global_context = ""
        self._bot_rng: random.Random | None = None

    @property
    def num_agents(self) -> int:
        return len(self.agents)

    @property
    def max_num_agents(self) -> int:
        return len(self.possible_agents)

    @property
    def cumulative_rewards(self) -> dict[str, float]:
        """Each agent's rewards summed since the reset (agents that left included)."""
        return dict(self._cumulative_rewards)

    @property
    def bot_rng(self) -> random.Random:
        """The generator of the scripted bots (seeded from the episode seed, apart from
        :attr:`rng` and :attr:`action_rng`), so bots replay with the seed."""
        return self._derived_rng("_bot_rng", "bots")

    def _seed_generators(self, seed: int | None) -> None:
        super()._seed_generators(seed)
        self._bot_rng = None

    def reset(self, seed: int | None = None, **options: Any) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
        """Start an episode with every possible agent (:meth:`start` sets up the game's own
        state); returns ``(observations, infos)`` per agent. ``seed`` seeds the generators as a
        single-agent ``reset`` does."""
        self._reseed(seed)
        self._started = True
        self.agents = list(self.possible_agents)
        self.terminations = {agent: False for agent in self.agents}
        self.truncations = {agent: False for agent in self.agents}
        self.rewards = {agent: 0.0 for agent in self.agents}
        self.infos = {agent: {} for agent in self.agents}
        self._cumulative_rewards = {agent: 0.0 for agent in self.agents}
        self.shared_memory, self.global_context = [], ""
        if self.agent_selector is None:
            self.agent_selector = AgentSelector(self.agents, self.mode)
        else:  # a selector the subclass made keeps its mode
            self.agent_selector.reinit(self.agents)
        self.start()
        return self.observations()

    def start(self) -> None:
        """Set up a new episode's own state (drawing from :attr:`rng`); called by :meth:`reset`
        once the agents are in."""

    def observations(self) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
        """Every agent's current observation and a copy of its info."""
        return {agent: self.observe(agent) for agent in self.agents}, {agent: dict(self.infos[agent]) for agent in self.agents}

    @property
    def active_agents(self) -> list[str]:
        """The agents whose actions the next :meth:`step` takes."""
        return self.agent_selector.get_active_agents() if self.agent_selector is not None else list(self.agents)

    def step(self, actions: dict[str, str]) -> AgentDicts:
        """Apply one action per active agent; returns observations, rewards, terminations,
        truncations and infos, each keyed by agent."""
        if not isinstance(actions, dict):
            raise MultiAgentError(f"A multi-agent step takes a dict {{agent: action}}, not {type(actions).__name__}.")
        if not self._started:
            raise MultiAgentError("Call reset() before step().")
        active = self.active_agents
        missing = [agent for agent in active if agent not in actions]
        if missing:
            raise MultiAgentError(f"Missing action for active agent(s) {', '.join(missing)} "
                                        f"(active now: {', '.join(active) or 'none'}).")
        extra = [agent for agent in actions if agent not in active]
        if extra:
            raise MultiAgentError(f"Agent(s) {', '.join(map(str, extra))} sent an action but are not active "
                                        f"(active now: {', '.join(active) or 'none'}).")
        observations, rewards, terminations, truncations, infos = self._process_actions(actions)
        for agent, reward in rewards.items():
            self._cumulative_rewards[agent] = self._cumulative_rewards.get(agent, 0.0) + float(reward)
        self.rewards = dict(rewards)
        self.terminations.update(terminations)
        self.truncations.update(truncations)
        for agent, info in infos.items():  # each agent's info from its latest step
            self.infos[agent] = dict(info)
        self._remove_dead_agents()
        if self.agent_selector is not None and self.agent_selector.mode == "sequential" and self.agents:
            self._advance()
        return observations, rewards, terminations, truncations, infos

    def _advance(self) -> None:
        """Pass the turn after a sequential step; games whose turn order is not round-robin
        override it (e.g. with ``agent_selector.select``)."""
        assert self.agent_selector is not None
        self.agent_selector.next()

    @abc.abstractmethod
    def observe(self, agent: str) -> str:
        """What ``agent`` sees now."""

    @abc.abstractmethod
    def _process_actions(self, actions: dict[str, str]) -> AgentDicts:
        """Apply the active agents' actions; return the five per-agent dicts (agents not
        mentioned keep their flags)."""

    def get_state(self, agent: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """``(observation, cumulative reward, terminated, truncated, info)`` of an agent still in."""
        if agent not in self.agents:
            raise MultiAgentError(f"Agent {agent!r} is not in the environment (in: {', '.join(self.agents) or 'none'}).")
        return (self.observe(agent), self._cumulative_rewards.get(agent, 0.0), self.terminations.get(agent, False),
                self.truncations.get(agent, False), self.infos.get(agent, {}))

    def get_active_states(self) -> dict[str, tuple[str, float, bool, bool, dict[str, Any]]]:
        return {agent: self.get_state(agent) for agent in self.active_agents if agent in self.agents}

    def add_agent(self, agent: str) -> None:
        if agent in self.agents:
            return
        self.agents.append(agent)
        self.terminations[agent] = self.truncations[agent] = False
        self.rewards[agent] = 0.0
        self.infos[agent] = {}
        self._cumulative_rewards.setdefault(agent, 0.0)
        if self.agent_selector is not None:
            self.agent_selector.add_agent(agent)

    def remove_agent(self, agent: str) -> None:
        """Take ``agent`` out of the game (its cumulative reward is kept)."""
        if agent not in self.agents:
            return
        self.agents.remove(agent)
        if self.agent_selector is not None:
            self.agent_selector.remove_agent(agent)

    def _remove_dead_agents(self) -> None:
        for agent in [a for a in self.agents if self.terminations.get(a) or self.truncations.get(a)]:
            self.remove_agent(agent)

    def send_message(self, from_agent: str, to_agent: str, message: str) -> None:
        for role, agent in (("Sender", from_agent), ("Receiver", to_agent)):
            if agent not in self.agents:
                raise MultiAgentError(f"{role} {agent!r} is not in the environment.")
        self.shared_memory.append({"from": from_agent, "to": to_agent, "message": str(message)})

    def broadcast_message(self, from_agent: str, message: str) -> None:
        if from_agent not in self.agents:
            raise MultiAgentError(f"Sender {from_agent!r} is not in the environment.")
        for agent in self.agents:
            if agent != from_agent:
                self.shared_memory.append({"from": from_agent, "to": agent, "message": str(message)})

    def messages_for(self, agent: str) -> list[dict[str, str]]:
        return [m for m in self.shared_memory if m["to"] == agent]

    def scripted_action(self, agent: str) -> str:
        """The environment's own bot's action for ``agent`` (drawing from :attr:`bot_rng`);
        games implement it so that a person or a model can play against them."""
        raise NotImplementedError(f"{type(self).__name__} has no scripted bot")

    def sample_random_action(self) -> str:
        """Not for a multi-agent environment (it samples per agent): a clear error naming
        :meth:`random_action` and the single-agent views."""
        raise GemError("A multi-agent environment samples per agent: use random_action(agent), or a "
                       "single-agent view (self_play, versus).")

    def random_action(self, agent: str) -> str:
        """A random well-formed action for ``agent`` (from :attr:`action_rng`)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement random_action()")


def is_multiagent(env: object) -> bool:
    """Whether ``env`` is a multi-agent environment (not a single-agent view of one)."""
    return isinstance(env, MultiAgentEnv)


def split_by_agent(episode: Episode) -> list[Episode]:
    """One episode per agent of a self-play episode (turns with ``info["agent"]`` and
    ``info["rewards"]``, see :class:`gem_core.wrappers.seats.SelfPlay`); other episodes come back
    as they are.

    Each agent's episode holds its own turns, in order; a turn's reward is everything the agent
    earned from that turn's step until its next turn (the rewards a game hands out when it ends
    included), so a loser's last move carries the loss even though another agent's move ended the
    game. Rewards an agent earns before its first move go to its first turn. The last turn of
    each agent's episode carries the episode's end flags, and every part the episode's
    :attr:`~gem_core.episodes.Episode.failure`; the turn of the step that failed it (whose info is
    the fault report) is the move of the agent that was to move.
    """
    if not episode.turns or "agent" not in episode.turns[0].info:
        return [episode]
    turns: dict[str, list[Turn]] = {}
    pending: dict[str, float] = {}  # earned before the agent's first turn
    to_move = None
    for turn in episode.turns:
        agent = turn.info.get("agent", to_move)  # a failed step's turn holds only its fault report
        to_move = turn.info.get("next_agent", agent)
        own = turns.setdefault(agent, [])
        own.append(Turn(turn.observation, turn.action, pending.pop(agent, 0.0), False, False, turn.info))
        for other, reward in turn.info.get("rewards", {}).items():
            if turns.get(other):
                turns[other][-1].reward += float(reward)
            else:
                pending[other] = pending.get(other, 0.0) + float(reward)
    last = episode.turns[-1]
    for own in turns.values():
        own[-1].terminated, own[-1].truncated = last.terminated, last.truncated
    return [Episode(episode.env_id, episode.seed, own, episode.final_observation, agent=agent,
                    failure=episode.failure)
            for agent, own in turns.items()]

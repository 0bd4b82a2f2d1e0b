"""Single-agent views of multi-agent environments: the bridge from a
:class:`~gem_core.multiagent.MultiAgentEnv` (not an :class:`~gem_core.core.Env`) to single-agent
code, so that wrappers, vector environments, episode collection, estimators, ``gem train``,
``gem eval``, ``gem play`` and the adapters use it unchanged. A view is an :class:`Env` (not a
:class:`~gem_core.core.Wrapper`: it changes the interface); ``view.env`` is the multi-agent
environment, and the spec, generators, ``close`` and other attributes are looked up on it.

* :class:`SelfPlay` (``self_play``): one policy plays every seat. Each step is one agent's move;
  ``info["agent"]`` names who moved, ``info["next_agent"]`` who moves next, and
  ``info["rewards"]`` holds every agent's rewards from that step. The step's reward is the
  mover's. Turns of a simultaneous-move game are asked one agent at a time; the environment
  steps once every active agent has answered. :func:`split_by_agent` turns a self-play episode
  into one episode per agent, each turn credited with what its agent earned until its next turn,
  which is what estimators should see.
* :class:`Versus` (``versus``): the policy plays one seat (``seat``: an agent name, or
  ``"random"``, drawn per episode); the others are played by ``policies`` (``{agent: callable
  observation -> action}``, e.g. a model) or by the environment's scripted bots. A step is the
  policy's move followed by the others' until the policy is to move again; its reward is what the
  policy's seat earned meanwhile. ``info["seat"]`` names the seat; at the end,
  ``info["outcome"]`` is ``"win"``, ``"loss"`` or ``"draw"`` where the game says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from gem_core.core import BaseEnv, Env, Forwarding, ResetResult, StepResult
from gem_core.errors import GemError, MalformedResultError
from gem_core.multiagent import MultiAgentEnv

Policy = Callable[[str], str]


class SeatView(Forwarding, Env):  # type: ignore[override]
    """A single-agent :class:`Env` played on the seats of the multi-agent environment ``env``;
    subclasses implement ``reset``, ``step`` and ``sample_random_action``."""

    _watch_global_random = False  # its calls run the multi-agent environment's
    env: MultiAgentEnv

    def __init__(self, env: BaseEnv, wrapper: str):
        if not isinstance(env, MultiAgentEnv):
            raise GemError(f"The {wrapper} wrapper goes directly on a multi-agent environment, not on "
                           f"{type(env).__name__}.")
        self.env = env


class SelfPlay(SeatView):
    """One policy plays every seat; see the module documentation."""

    def __init__(self, env: BaseEnv):
        super().__init__(env, "self_play")
        self._queue: list[str] = []
        self._pending: dict[str, str] = {}

    def reset(self, seed: int | None = None, **options: Any) -> ResetResult:
        self.env.reset(seed, **options)
        self._pending = {}
        self._queue = self.env.active_agents
        agent = self._queue[0]
        return self.env.observe(agent), {"agent": agent, **self.env.infos.get(agent, {})}

    def step(self, action: str) -> StepResult:
        if not self._queue:
            raise GemError("The episode is over: reset the environment.")
        agent = self._queue.pop(0)
        self._pending[agent] = action
        if self._queue:  # a simultaneous move: the other active agents answer first
            following = self._queue[0]
            return self.env.observe(following), 0.0, False, False, {"agent": agent, "next_agent": following,
                                                                     "rewards": {}}
        actions, self._pending = self._pending, {}
        _, rewards, terminations, truncations, infos = self.env.step(actions)
        info = {**infos.get(agent, {}), "agent": agent, "rewards": _checked_rewards(rewards)}
        if not self.env.agents:  # the game is over for everyone
            terminated = any(terminations.values()) or any(self.env.terminations.values())
            return self.env.observe(agent), float(rewards.get(agent, 0.0)), terminated, not terminated, info
        self._queue = self.env.active_agents
        info["next_agent"] = self._queue[0]
        return self.env.observe(self._queue[0]), float(rewards.get(agent, 0.0)), False, False, info

    def sample_random_action(self) -> str:
        if not self._queue:
            raise GemError("The episode is over: reset the environment.")
        return self.env.random_action(self._queue[0])


def _checked_rewards(rewards: Mapping[str, Any]) -> dict[str, float]:
    """Every agent's reward of a step as a float, or :class:`MalformedResultError` (the episode
    fails as malformed) for one that is not a finite number: split seats are trained on them all."""
    checked = {}
    for agent, reward in rewards.items():
        try:
            checked[agent] = float(reward)
        except (TypeError, ValueError):
            raise MalformedResultError(f"step() returned a reward for {agent!r} that is not a number: {reward!r}") from None
        if not math.isfinite(checked[agent]):
            raise MalformedResultError(f"step() returned a reward of {reward} for {agent!r}: every reward must be a "
                                       "finite number")
    return checked


class Versus(SeatView):
    """The policy plays one seat against ``policies`` or the scripted bots; see the module
    documentation."""

    def __init__(self, env: BaseEnv, *, seat: str = "random", policies: Mapping[str, Policy] | None = None):
        super().__init__(env, "versus")
        if seat != "random" and seat not in self.env.possible_agents:
            raise GemError(f"Unknown seat {seat!r}; choose one of {', '.join(self.env.possible_agents)} or 'random'.")
        unknown = sorted(set(policies or {}) - set(self.env.possible_agents))
        if unknown:
            raise GemError(f"Policies given for unknown agent(s) {', '.join(unknown)}; the agents are "
                           f"{', '.join(self.env.possible_agents)}.")
        self.seat_option, self.policies = seat, dict(policies or {})
        self.seat = self.env.possible_agents[0]

    def reset(self, seed: int | None = None, **options: Any) -> ResetResult:
        self.env.reset(seed, **options)
        choices = self.env.possible_agents
        self.seat = self.env.bot_rng.choice(choices) if self.seat_option == "random" else self.seat_option
        info = {"seat": self.seat}
        self._play_others(info)
        return self.env.observe(self.seat), info

    def step(self, action: str) -> StepResult:
        env, seat = self.env, self.seat
        if seat not in env.agents:
            raise GemError("The episode is over: reset the environment.")
        actions = {agent: action if agent == seat else self._other(agent) for agent in env.active_agents}
        _, rewards, _, _, infos = env.step(actions)
        info = {**infos.get(seat, {}), "seat": seat}
        reward = float(rewards.get(seat, 0.0)) + self._play_others(info)
        if seat in env.agents:
            return env.observe(seat), reward, False, False, info
        terminated = bool(env.terminations.get(seat))
        return env.observe(seat), reward, terminated, not terminated, info

    def sample_random_action(self) -> str:
        return self.env.random_action(self.seat)

    def _play_others(self, info: dict[str, Any] | None = None) -> float:
        """Step the others until the seat is to move or out; returns the seat's rewards meanwhile
        and adds what the steps said of the seat to ``info``."""
        env, earned = self.env, 0.0
        while env.agents and self.seat in env.agents and self.seat not in env.active_agents:
            _, rewards, _, _, infos = env.step({agent: self._other(agent) for agent in env.active_agents})
            earned += float(rewards.get(self.seat, 0.0))
            if info is not None:
                info.update(infos.get(self.seat, {}))
        return earned

    def _other(self, agent: str) -> str:
        policy = self.policies.get(agent)
        return policy(self.env.observe(agent)) if policy is not None else self.env.scripted_action(agent)


def self_play(env: BaseEnv) -> SelfPlay:
    """One policy plays every seat of a multi-agent environment."""
    return SelfPlay(env)


def versus(env: BaseEnv, *, seat: str = "random", policies: Mapping[str, Policy] | None = None) -> Versus:
    """The policy plays ``seat``; ``policies`` or the environment's scripted bots play the others."""
    return Versus(env, seat=seat, policies=policies)

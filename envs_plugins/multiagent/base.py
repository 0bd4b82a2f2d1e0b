"""What the multi-agent games share: seats named ``player_0``, ``player_1``, ..., moves read from the
last ``\\boxed{}`` of an action, the end of a game with each player's outcome, and a turn limit.

Rules every game follows (documented in docs/envs.md):

* an action without a legal move (no ``\\boxed{}``, an unreadable one, or a move the rules forbid)
  is penalised as the game says (a forfeit in the two-player games), with ``info["format_error"]``
  or ``info["invalid_move"]`` for the player who wrote it;
* when a game ends, every player still in gets ``info["outcome"]`` (``"win"``, ``"loss"`` or
  ``"draw"``) and leaves;
* ``max_turns`` moves (all players together) end the game truncated, as a draw with no reward.
"""

from __future__ import annotations

from typing import Any

from gem_core.multiagent import AgentDicts, MultiAgentEnv
from gem_core.parsing import last_boxed

#: Box contents longer than this are not read as a move.
MAX_MOVE_CHARS = 100


def boxed_move(action: str) -> str | None:
    """The text of the action's last ``\\boxed{}``, lower-cased and trimmed; None without one."""
    text = last_boxed(action) if isinstance(action, str) else None
    if text is None or len(text) > MAX_MOVE_CHARS:
        return None
    return " ".join(text.lower().split())


class TurnGame(MultiAgentEnv):
    """A game of ``num_players`` seats; subclasses implement :meth:`start`, :meth:`observe`,
    :meth:`play` (one move, or None for the moves of a simultaneous round) and the bots."""

    title = "game"

    def __init__(self, num_players: int = 2, max_turns: int = 100):
        super().__init__()
        self.possible_agents = [f"player_{i}" for i in range(num_players)]
        self.max_turns = max_turns
        self.turn = 0
        self.events: list[str] = []  # what happened, for the observations

    def reset(self, seed: int | None = None, **options: Any) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
        self.turn, self.events = 0, []
        return super().reset(seed, **options)

    def _process_actions(self, actions: dict[str, str]) -> AgentDicts:
        self.turn += 1
        rewards = {agent: 0.0 for agent in self.agents}
        infos: dict[str, dict[str, Any]] = {agent: {} for agent in self.agents}
        self.play(actions, rewards, infos)
        terminations = {agent: self.terminations.get(agent, False) for agent in self.agents}
        truncations = {agent: False for agent in self.agents}
        if self.turn >= self.max_turns and not all(terminations.values()):
            self.events.append(f"The turn limit ({self.max_turns}) is reached: the game ends in a draw.")
            for agent in self.agents:
                if not terminations[agent]:
                    truncations[agent] = True
                    infos[agent]["outcome"] = "draw"
        for agent, info in infos.items():  # so that the observations below can tell the outcome
            self.infos[agent] = dict(info)
        observations = {agent: self.observe(agent) for agent in self.agents}
        return observations, rewards, terminations, truncations, infos

    def play(self, actions: dict[str, str], rewards: dict[str, float], infos: dict[str, dict[str, Any]]) -> None:
        """Apply the moves: add to ``rewards`` and ``infos``; end players with :meth:`finish` or
        :meth:`eliminate`."""
        raise NotImplementedError

    def finish(self, rewards: dict[str, float], infos: dict[str, dict[str, Any]],
               final: dict[str, float]) -> None:
        """End the game: each player still in gets ``final[agent]`` and the outcome its sign
        says."""
        for agent in self.agents:
            if self.terminations.get(agent):  # already out (eliminated this step)
                continue
            reward = final.get(agent, 0.0)
            rewards[agent] = rewards.get(agent, 0.0) + reward
            outcome = "win" if reward > 0 else "loss" if reward < 0 else "draw"
            infos.setdefault(agent, {})["outcome"] = outcome
            self.terminations[agent] = True

    def eliminate(self, agent: str, rewards: dict[str, float], infos: dict[str, dict[str, Any]],
                  reward: float) -> None:
        """Take one player out of a game that goes on."""
        rewards[agent] = rewards.get(agent, 0.0) + reward
        infos.setdefault(agent, {})["outcome"] = "loss"
        self.terminations[agent] = True

    def header(self, agent: str) -> str:
        """The first lines of every observation: the game and the seat."""
        others = ", ".join(a for a in self.possible_agents if a != agent)
        return f"{self.title}. You are {agent} (opponents: {others})."

    def footer(self, agent: str, prompt: str) -> str:
        """The last line: what to do now, or how the game ended for ``agent``."""
        outcome = self.infos.get(agent, {}).get("outcome")
        if agent not in self.agents or outcome is not None:
            return f"The game is over for you: {outcome or 'ended'}."
        if agent in self.active_agents:
            return prompt
        return f"Waiting for {', '.join(self.active_agents)} to move."

    def recent(self, count: int = 6) -> str:
        return "\n".join(self.events[-count:])

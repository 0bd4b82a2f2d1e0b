"""The iterated prisoner's dilemma for two, played at the same time each round for ``rounds``
rounds. A move is ``\\boxed{cooperate}`` or ``\\boxed{defect}``. Each round pays both cooperating
3 each, both defecting 1 each, and a defector against a cooperator 5 against 0; a round's payoff is
that round's reward. An action that is neither is played as ``defect`` and costs its writer 1 point
(``format_error``). At the end the higher total wins (``outcome``); the game is not zero-sum."""

from __future__ import annotations

from typing import Any

from gem_envs.multiagent.base import TurnGame, boxed_move

MOVES = ("cooperate", "defect")
PAYOFF = {("cooperate", "cooperate"): (3.0, 3.0), ("cooperate", "defect"): (0.0, 5.0),
          ("defect", "cooperate"): (5.0, 0.0), ("defect", "defect"): (1.0, 1.0)}
MALFORMED_COST = 1.0


class PrisonersDilemmaEnv(TurnGame):
    title = "Iterated prisoner's dilemma"
    mode = "parallel"

    def __init__(self, rounds: int = 5, max_turns: int | None = None):
        super().__init__(num_players=2, max_turns=max_turns or rounds + 1)
        self.rounds = rounds
        self.played: list[tuple[str, str]] = []

    def start(self) -> None:
        self.played = []

    def observe(self, agent: str) -> str:
        me = self.possible_agents.index(agent)
        history = "\n".join(f"round {i + 1}: you {moves[me]}, opponent {moves[1 - me]}"
                            for i, moves in enumerate(self.played)) or "no rounds yet"
        totals = self.cumulative_rewards
        return (f"{self.header(agent)} Each round both players choose at the same time: both cooperate 3 each, "
                f"both defect 1 each, a defector against a cooperator 5 against 0. Round {min(len(self.played) + 1, self.rounds)} "
                f"of {self.rounds}.\n{history}\nYour total: {totals.get(agent, 0):g}; opponent: "
                f"{totals.get(self.possible_agents[1 - me], 0):g}\n"
                + self.footer(agent, "Your move: \\boxed{cooperate} or \\boxed{defect}."))

    def play(self, actions: dict[str, str], rewards: dict[str, float], infos: dict[str, dict[str, Any]]) -> None:
        moves = []
        for agent in self.possible_agents:
            move = boxed_move(actions[agent])
            if move not in MOVES:
                infos[agent]["format_error"] = True
                rewards[agent] -= MALFORMED_COST
                move = "defect"
            moves.append(move)
        first, second = PAYOFF[(moves[0], moves[1])]
        rewards[self.possible_agents[0]] += first
        rewards[self.possible_agents[1]] += second
        self.played.append((moves[0], moves[1]))
        self.events.append(f"Round {len(self.played)}: {moves[0]} / {moves[1]}.")
        if len(self.played) == self.rounds:
            totals = {a: self._cumulative_rewards.get(a, 0.0) + rewards[a] for a in self.agents}
            best = max(totals.values())
            leaders = [a for a, t in totals.items() if t == best]
            for agent in self.agents:
                outcome = "draw" if len(leaders) > 1 else "win" if agent in leaders else "loss"
                infos[agent]["outcome"] = outcome
                self.terminations[agent] = True

    def scripted_action(self, agent: str) -> str:
        """Tit for tat: cooperate first, then do what the opponent did last round."""
        if not self.played:
            return "\\boxed{cooperate}"
        opponent = 1 - self.possible_agents.index(agent)
        return f"\\boxed{{{self.played[-1][opponent]}}}"

    def random_action(self, agent: str) -> str:
        return f"\\boxed{{{self.action_rng.choice(MOVES)}}}"

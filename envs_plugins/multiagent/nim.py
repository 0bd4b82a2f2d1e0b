"""Nim for two: piles of stones, drawn per episode; ``player_0`` moves first. A move takes one or
more stones from one pile, written ``\\boxed{PILE COUNT}`` (``\\boxed{2 3}``: three stones from
pile 2). Whoever takes the last stone wins: +1, and -1 for the other. A move that is not legal
forfeits: -1 for the mover, +1 for the other."""

from __future__ import annotations

import functools
import operator
from typing import Any

from gem_envs.multiagent.base import TurnGame, boxed_move


class NimEnv(TurnGame):
    title = "Nim"

    def __init__(self, piles: int = 3, max_stones: int = 7, max_turns: int = 64):
        super().__init__(num_players=2, max_turns=max_turns)
        self.num_piles, self.max_stones = piles, max_stones
        self.piles: list[int] = []

    def start(self) -> None:
        self.piles = [self.rng.randint(1, self.max_stones) for _ in range(self.num_piles)]

    def observe(self, agent: str) -> str:
        piles = ", ".join(f"pile {i + 1}: {n}" for i, n in enumerate(self.piles))
        return (f"{self.header(agent)} Take one or more stones from one pile; whoever takes the last stone "
                f"wins.\nPiles: {piles}\n{self.recent(2)}\n"
                + self.footer(agent, self.move_prompt()))

    def move_prompt(self) -> str:
        """How to move, with a legal example: up to 2 stones from the first pile that has any."""
        pile = next((i for i, n in enumerate(self.piles) if n), 0)
        count = max(1, min(2, self.piles[pile] if self.piles else 1))
        stones = "stone" if count == 1 else "stones"
        return f"Your move: \\boxed{{PILE COUNT}}, e.g. \\boxed{{{pile + 1} {count}}} takes {count} {stones} from pile {pile + 1}."

    def legal(self, move: str | None) -> tuple[int, int] | None:
        parts = move.split() if move else []
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            return None
        pile, count = int(parts[0]), int(parts[1])
        if 1 <= pile <= len(self.piles) and 1 <= count <= self.piles[pile - 1]:
            return pile, count
        return None

    def play(self, actions: dict[str, str], rewards: dict[str, float], infos: dict[str, dict[str, Any]]) -> None:
        (agent, action), = actions.items()
        other = next(a for a in self.agents if a != agent)
        move = boxed_move(action)
        legal = self.legal(move)
        if legal is None:
            infos[agent]["format_error" if move is None else "invalid_move"] = True
            self.events.append(f"{agent} forfeits: {move!r} is not a legal move.")
            self.finish(rewards, infos, {agent: -1.0, other: 1.0})
            return
        pile, count = legal
        self.piles[pile - 1] -= count
        self.events.append(f"{agent} took {count} from pile {pile}.")
        if not any(self.piles):
            self.events.append(f"{agent} took the last stone and wins.")
            self.finish(rewards, infos, {agent: 1.0, other: -1.0})

    def scripted_action(self, agent: str) -> str:
        """The winning move when the piles' XOR is not zero; otherwise one stone from a random pile."""
        total = functools.reduce(operator.xor, self.piles, 0)
        if total:
            for i, n in enumerate(self.piles):
                if n ^ total < n:
                    return f"\\boxed{{{i + 1} {n - (n ^ total)}}}"
        pile = self.bot_rng.choice([i for i, n in enumerate(self.piles) if n] or [0])
        return f"\\boxed{{{pile + 1} 1}}"

    def random_action(self, agent: str) -> str:
        options = [i for i, n in enumerate(self.piles) if n] or [0]
        pile = self.action_rng.choice(options)
        return f"\\boxed{{{pile + 1} {self.action_rng.randint(1, max(self.piles[pile], 1))}}}"

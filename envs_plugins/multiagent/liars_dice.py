"""Liar's dice for two or more players, free for all. Each player starts with ``dice`` dice, rolled
in secret each round. In turn, players raise the bid, a claim that at least QUANTITY dice on the
table show FACE, written ``\\boxed{QUANTITY FACE}`` (a higher quantity, or the same quantity and a
higher face; at most the number of dice in play), or call the last bid a lie with
``\\boxed{liar}``. All dice are shown: if fewer than QUANTITY show FACE the bidder loses a die,
otherwise the caller does, and the loser starts the next round (or, out of dice, the player after
it). A player without dice is out: reward -1. The last player left wins: +1. An action that is
neither a higher bid nor a call (``liar`` with no bid open included) costs its writer a die, as a
lost call does, and that player starts the next round."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gem_envs.multiagent.base import TurnGame, boxed_move


class LiarsDiceEnv(TurnGame):
    title = "Liar's dice"

    def __init__(self, players: int = 3, dice: int = 2, max_turns: int = 200):
        super().__init__(num_players=players, max_turns=max_turns)
        self.dice_per_player = dice
        self.dice: dict[str, list[int]] = {}
        self.bid: tuple[int, int] | None = None
        self.bidder: str | None = None
        self._next: str | None = None  # who starts the next round

    def start(self) -> None:
        self._next = None
        self.dice = {agent: [0] * self.dice_per_player for agent in self.agents}
        self.roll()

    def roll(self) -> None:
        for agent in self.agents:
            self.dice[agent] = sorted(self.rng.randint(1, 6) for _ in self.dice[agent])
        self.bid, self.bidder = None, None

    def in_play(self) -> int:
        return sum(len(self.dice[agent]) for agent in self.agents)

    def observe(self, agent: str) -> str:
        counts = ", ".join(f"{a}: {len(self.dice.get(a, []))}" for a in self.possible_agents)
        bid = f"{self.bid[0]} x {self.bid[1]} by {self.bidder}" if self.bid else "none (you may open)"
        mine = " ".join(map(str, self.dice.get(agent, []))) or "none"
        return (f"{self.header(agent)} Bid that at least QUANTITY dice on the table show FACE, higher than the "
                f"last bid, or call it a lie.\nYour dice: {mine}\nDice per player: {counts} ({self.in_play()} in play)\n"
                f"Current bid: {bid}\n{self.recent(4)}\n"
                + self.footer(agent, f"Your move: \\boxed{{QUANTITY FACE}} (e.g. \\boxed{{{self.example_move()}}}) "
                              "or \\boxed{liar}."))

    def example_move(self) -> str:
        """The smallest legal raise, the prompt's example (``liar`` when no raise is left)."""
        if self.bid is None:
            return "1 5"
        quantity, face = self.bid
        raise_ = (quantity, face + 1) if face < 6 else (quantity + 1, 1)
        return f"{raise_[0]} {raise_[1]}" if raise_[0] <= self.in_play() else "liar"

    def parse(self, move: str | None) -> tuple[int, int] | str | None:
        """``"liar"``, a legal raise ``(quantity, face)``, or None."""
        if move == "liar":
            return "liar" if self.bid is not None else None
        parts = move.split() if move else []
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            return None
        quantity, face = int(parts[0]), int(parts[1])
        if not (1 <= face <= 6 and 1 <= quantity <= self.in_play()):
            return None
        if self.bid is not None and (quantity, face) <= self.bid:
            return None
        return quantity, face

    def play(self, actions: dict[str, str], rewards: dict[str, float], infos: dict[str, dict[str, Any]]) -> None:
        (agent, action), = actions.items()
        move = boxed_move(action)
        parsed = self.parse(move)
        if parsed is None:
            infos[agent]["format_error" if move is None else "invalid_move"] = True
            self.events.append(f"{agent} wrote {move!r}, neither a higher bid nor a call: it loses a die.")
            self.lose_die(agent, rewards, infos)
        elif parsed == "liar":
            quantity, face = self.bid  # type: ignore[misc]
            shown = sum(Counter(self.dice[a])[face] for a in self.agents)
            table = "; ".join(f"{a}: {' '.join(map(str, self.dice[a]))}" for a in self.agents)
            loser = self.bidder if shown < quantity else agent
            self.events.append(f"{agent} calls {self.bidder}'s bid of {quantity} x {face} a lie. Dice: {table}. "
                               f"{shown} show {face}: {loser} loses a die.")
            self.lose_die(loser, rewards, infos)  # type: ignore[arg-type]
        else:
            self.bid, self.bidder = parsed, agent
            self.events.append(f"{agent} bids {parsed[0]} x {parsed[1]}.")

    def lose_die(self, loser: str, rewards: dict[str, float], infos: dict[str, dict[str, Any]]) -> None:
        """``loser`` loses a die; out of dice, it leaves; one player left wins. A new round
        starts with the loser (or the player after it)."""
        self.dice[loser].pop()
        order = self.agents
        follower = order[(order.index(loser) + 1) % len(order)]
        if not self.dice[loser]:
            self.events.append(f"{loser} has no dice left and is out.")
            self.eliminate(loser, rewards, infos, -1.0)
            self._next = follower
        else:
            self._next = loser
        still_in = [a for a in self.agents if not self.terminations.get(a)]
        if len(still_in) == 1:
            self.events.append(f"{still_in[0]} is the last player left and wins.")
            self.finish(rewards, infos, {still_in[0]: 1.0})
            return
        self.roll()

    def _advance(self) -> None:
        if self._next is not None and self._next in self.agents:
            self.agent_selector.select(self._next)  # type: ignore[union-attr]
        else:
            self.agent_selector.next()  # type: ignore[union-attr]
        self._next = None

    def scripted_action(self, agent: str) -> str:
        """Calls a bid above what its own dice and the odds (a sixth of the others' dice) make
        likely; otherwise raises on the face it holds most."""
        own = Counter(self.dice[agent])
        others = self.in_play() - len(self.dice[agent])
        expected = {face: own[face] + others / 6 for face in range(1, 7)}
        if self.bid is not None and self.bid[0] > expected[self.bid[1]] + 0.5:
            return "\\boxed{liar}"
        best = max(own.values(), default=0)
        face = self.bot_rng.choice(sorted(f for f in range(1, 7) if own[f] == best))
        if self.bid is None:
            return f"\\boxed{{{max(1, int(expected[face]))} {face}}}"
        quantity = self.bid[0] if face > self.bid[1] else self.bid[0] + 1
        if quantity > min(expected[face] + 1, self.in_play()):
            return "\\boxed{liar}"
        return f"\\boxed{{{quantity} {face}}}"

    def random_action(self, agent: str) -> str:
        if self.bid is not None and self.action_rng.random() < 0.3:
            return "\\boxed{liar}"
        raises = [(q, f) for q in range(1, self.in_play() + 1) for f in range(1, 7)
                  if self.bid is None or (q, f) > self.bid]
        if not raises:
            return "\\boxed{liar}"
        quantity, face = self.action_rng.choice(raises[:12])
        return f"\\boxed{{{quantity} {face}}}"

"""Kuhn poker for two: a deck of J, Q, K; each player antes 1 chip and gets one card; ``player_0``
acts first. Moves in ``\\boxed{}``: ``check`` or ``bet`` (1 chip) when no bet is open, ``call``
or ``fold`` facing a bet. Check-check and bet-call go to a showdown, the higher card taking the
pot; a fold gives the pot to the other player. The reward is the chips won or lost (+-1 or +-2;
zero-sum). A move that is not legal now counts as a fold, with ``format_error``/``invalid_move``."""

from __future__ import annotations

from typing import Any

from gem_envs.multiagent.base import TurnGame, boxed_move

CARDS = ("J", "Q", "K")


class KuhnPokerEnv(TurnGame):
    title = "Kuhn poker"

    def __init__(self, max_turns: int = 3):
        super().__init__(num_players=2, max_turns=max_turns)
        self.cards: dict[str, str] = {}
        self.history: list[str] = []

    def start(self) -> None:
        dealt = self.rng.sample(CARDS, 2)
        self.cards = dict(zip(self.possible_agents, dealt))
        self.history = []

    def facing_bet(self) -> bool:
        return bool(self.history) and self.history[-1] == "bet"

    def moves(self) -> tuple[str, ...]:
        return ("call", "fold") if self.facing_bet() else ("check", "bet")

    def observe(self, agent: str) -> str:
        actions = ", ".join(f"{a}: {m}" for a, m in zip(self.possible_agents * 2, self.history)) or "none yet"
        return (f"{self.header(agent)} Cards J < Q < K; each player put 1 chip in. Your card: {self.cards[agent]}.\n"
                f"Moves so far: {actions}\n{self.recent(1)}\n"
                + self.footer(agent, f"Your move: \\boxed{{{self.moves()[0]}}} or \\boxed{{{self.moves()[1]}}}."))

    def play(self, actions: dict[str, str], rewards: dict[str, float], infos: dict[str, dict[str, Any]]) -> None:
        (agent, action), = actions.items()
        other = next(a for a in self.agents if a != agent)
        move = boxed_move(action)
        if move not in self.moves():
            infos[agent]["format_error" if move is None else "invalid_move"] = True
            self.events.append(f"{agent} wrote {move!r}, not a legal move: it counts as a fold.")
            move = "fold"
        self.history.append(move)
        if move == "fold":  # the folder loses its ante, the only chip it put in
            self.events.append(f"{agent} folds; {other} wins 1.")
            self.finish(rewards, infos, {agent: -1.0, other: 1.0})
        elif self.history[-2:] in (["check", "check"], ["bet", "call"]):
            stake = 2.0 if move == "call" else 1.0
            best = max(self.agents, key=lambda a: CARDS.index(self.cards[a]))
            self.events.append(f"Showdown: {', '.join(f'{a} holds {self.cards[a]}' for a in self.agents)}; "
                               f"{best} wins {stake:g}.")
            self.finish(rewards, infos, {a: stake if a == best else -stake for a in self.agents})
        else:
            self.events.append(f"{agent}: {move}.")

    def scripted_action(self, agent: str) -> str:
        """A simple strong strategy: K bets and calls; Q checks and calls a third of the time;
        J bluffs a third of the time and folds to a bet."""
        card, facing = self.cards[agent], self.facing_bet()
        if card == "K":
            move = "call" if facing else "bet"
        elif card == "Q":
            move = ("call" if self.bot_rng.random() < 1 / 3 else "fold") if facing else "check"
        else:
            move = "fold" if facing else ("bet" if self.bot_rng.random() < 1 / 3 else "check")
        return f"\\boxed{{{move}}}"

    def random_action(self, agent: str) -> str:
        return f"\\boxed{{{self.action_rng.choice(self.moves())}}}"

"""Tic-tac-toe for two: ``player_0`` plays X and moves first, ``player_1`` plays O. A move is a
cell number 1-9 in ``\\boxed{}`` (1-3 the top row). Three in a row wins: +1, and -1 for the
other; a full board is a draw (0 each). A move that is not a free cell forfeits: -1 for the
mover, +1 for the other."""

from __future__ import annotations

from typing import Any

from gem_envs.multiagent.base import TurnGame, boxed_move

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
MARKS = {"player_0": "X", "player_1": "O"}


def winner(board: list[str]) -> str | None:
    for a, b, c in LINES:
        if board[a] != " " and board[a] == board[b] == board[c]:
            return board[a]
    return None


class TicTacToeEnv(TurnGame):
    title = "Tic-tac-toe"

    def __init__(self, max_turns: int = 9):
        super().__init__(num_players=2, max_turns=max_turns)
        self.board = [" "] * 9

    def start(self) -> None:
        self.board = [" "] * 9

    def free_cells(self) -> list[int]:
        return [i + 1 for i, mark in enumerate(self.board) if mark == " "]

    def render(self) -> str:
        cells = [mark if mark != " " else str(i + 1) for i, mark in enumerate(self.board)]
        return "\n".join(" | ".join(cells[row * 3:row * 3 + 3]) for row in range(3))

    def observe(self, agent: str) -> str:
        return (f"{self.header(agent)} You play {MARKS[agent]}. Cells are numbered 1-9, 1-3 the top row; "
                f"three in a row wins.\n{self.render()}\n{self.recent(2)}\n"
                + self.footer(agent, f"Your move: a free cell number in \\boxed{{}}, e.g. \\boxed{{{self.example_cell()}}}."))

    def example_cell(self) -> int:
        """The cell the prompt gives as an example: a free one (the centre while it is free)."""
        free = self.free_cells()
        return free[0] if free and 5 not in free else 5

    def play(self, actions: dict[str, str], rewards: dict[str, float], infos: dict[str, dict[str, Any]]) -> None:
        (agent, action), = actions.items()
        other = next(a for a in self.agents if a != agent)
        move = boxed_move(action)
        cell = int(move) if move is not None and move.isdigit() else None
        if cell is None or cell not in self.free_cells():
            infos[agent]["format_error" if cell is None else "invalid_move"] = True
            self.events.append(f"{agent} forfeits: {move!r} is not a free cell.")
            self.finish(rewards, infos, {agent: -1.0, other: 1.0})
            return
        self.board[cell - 1] = MARKS[agent]
        self.events.append(f"{agent} ({MARKS[agent]}) took cell {cell}.")
        if winner(self.board):
            self.events.append(f"{agent} wins.")
            self.finish(rewards, infos, {agent: 1.0, other: -1.0})
        elif not self.free_cells():
            self.events.append("The board is full: a draw.")
            self.finish(rewards, infos, {})

    def scripted_action(self, agent: str) -> str:
        """Win if it can, else block, else the centre, a corner, a side."""
        mine, theirs = MARKS[agent], MARKS["player_1" if agent == "player_0" else "player_0"]
        free = self.free_cells()
        for mark in (mine, theirs):
            for cell in free:
                trial = list(self.board)
                trial[cell - 1] = mark
                if winner(trial) == mark:
                    return f"\\boxed{{{cell}}}"
        for group in ([5], [1, 3, 7, 9], [2, 4, 6, 8]):
            options = [cell for cell in group if cell in free]
            if options:
                return f"\\boxed{{{self.bot_rng.choice(options)}}}"
        return "\\boxed{1}"

    def random_action(self, agent: str) -> str:
        return f"\\boxed{{{self.action_rng.choice(self.free_cells() or [1])}}}"

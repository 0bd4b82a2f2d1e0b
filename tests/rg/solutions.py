"""Right and wrong answers for reasoning-gym items.

Most items carry their answer; five tasks accept many answers and carry none (``answer`` is
None), so their right answers are built here: from an example in the metadata, or by solving the
small instances the tests ask for (``CONFIGS``).
"""

from __future__ import annotations

import copy
import json
from collections import deque
from typing import Any

# Small instances, so that the solvers below stay quick.
CONFIGS: dict[str, dict[str, Any]] = {
    "rush_hour": {"min_moves": 1, "max_moves": 3},
    "futoshiki": {"min_board_size": 4, "max_board_size": 4},
}


def right_answer(name: str, entry: dict[str, Any]) -> str:
    metadata = entry["metadata"]
    if name == "graph_color":
        coloring = metadata["possible_answer"]
        return json.dumps({str(vertex): color for vertex, color in coloring.items()})
    if name == "propositional_logic":
        return metadata["example_answer"]
    if name == "rubiks_cube":
        return metadata["example_correct_answer"]
    if name == "rush_hour":
        return _solve_rush_hour(metadata["board_config"])
    if name == "boxnet":
        return json.dumps(_plan_boxnet(metadata["initial_state"]))
    assert entry["answer"] is not None, f"{name} has no answer and no solver here"
    return str(entry["answer"])


def wrong_answer(name: str, entry: dict[str, Any]) -> str:
    """An answer that is not right (different from the right one, and well-formed enough to be
    scored rather than rejected)."""
    right = right_answer(name, entry)
    if right.strip().lower() in ("true", "false", "yes", "no"):
        flipped = {"true": "False", "false": "True", "yes": "no", "no": "yes"}
        return flipped[right.strip().lower()]
    return "0" if right.strip() != "0" else "1"


def _solve_rush_hour(board_config: str) -> str:
    from reasoning_gym.games.rush_hour import Board

    start = Board(board_config)
    seen = {str(start)}
    queue = deque([(start, [])])
    while queue:
        board, moves = queue.popleft()
        if board.solved:
            return " ".join(moves)
        for i, piece in enumerate(board._pieces):
            if piece.fixed:
                continue
            for step in (-1, 1):
                after = copy.deepcopy(board)
                after.move(chr(ord("A") + i), step)
                if str(after) not in seen:
                    seen.add(str(after))
                    queue.append((after, [*moves, f"{chr(ord('A') + i)}{step:+d}"]))
    raise AssertionError(f"no solution for {board_config}")


def _plan_boxnet(state: dict[str, list[str]]) -> list[dict[str, str]]:
    """Move each box square by square to its target, one action per step."""
    def coordinates(key: str) -> tuple[float, float]:
        x, y = key.split("_")
        return float(x), float(y)

    plan = []
    targets = {item[len("target_"):]: coordinates(key)
               for key, items in state.items() for item in items if item.startswith("target_")}
    for key, items in state.items():
        for item in items:
            if not item.startswith("box_"):
                continue
            color = item[len("box_"):]
            x, y = coordinates(key)
            tx, ty = targets[color]
            while (x, y) != (tx, ty):
                nx, ny = (x + (1 if tx > x else -1), y) if x != tx else (x, y + (1 if ty > y else -1))
                plan.append({f"Agent[{x}, {y}]": f"move({item}, square[{nx}, {ny}])"})
                x, y = nx, ny
            plan.append({f"Agent[{x}, {y}]": f"move({item}, target_{color})"})
    return plan

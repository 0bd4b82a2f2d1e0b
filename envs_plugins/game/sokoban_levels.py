"""Random Sokoban levels that are solvable within a move budget, by construction.

A level is made backwards: carve a room by a random walk, put the boxes on their targets, then
pull boxes away from them as the player would in a reversed game. Playing the pulls back as
pushes solves the level, and the walks between pulls are shortest paths, so every pull's
forward cost is known: the level is the most scrambled state whose forward solution fits in the
budget. Cells are flat indices ``row * cols + col``.
"""

from __future__ import annotations

import random
from typing import NamedTuple

# Shapes carved around each step of the random walk (row, col offsets).
_SHAPES = (
    ((0, -1), (0, 0), (0, 1)),
    ((-1, 0), (0, 0), (1, 0)),
    ((0, -1), (0, 0), (1, 0)),
    ((0, 0), (0, 1), (1, 0)),
    ((0, -1), (0, 0), (1, -1), (1, 0)),
)
_STEPS = ((-1, 0), (1, 0), (0, -1), (0, 1))
_RESTARTS = 5  # reverse games tried per carved room
_PREFER_ON_TARGET = 0.8  # chance to pull a box still on its target when one can be pulled


class Level(NamedTuple):
    rows: int
    cols: int
    floor: bytes  # 1 for floor, 0 for wall, per cell
    targets: frozenset[int]
    boxes: frozenset[int]
    player: int
    solution_length: int  # moves of a known solution (an upper bound on the shortest)


class LevelGenerationError(RuntimeError):
    """No level with the requested settings could be made."""


def generate_level(
    rows: int, cols: int, num_boxes: int, max_moves: int, rng: random.Random, tries: int = 200
) -> Level:
    """A random level whose boxes all start off target, with at least one box more than one
    cell from its target, that can be solved in at most ``max_moves`` moves."""
    walk_steps = int(1.7 * (rows + cols))
    steps = (-cols, cols, -1, 1)
    for _ in range(tries):
        floor = bytes(_carve_room(rows, cols, walk_steps, rng))
        cells = [i for i, f in enumerate(floor) if f]
        # a target needs two floor cells in a row beside it, or its box could never leave
        pullable = [i for i in cells if any(floor[i + s] and floor[i + 2 * s] for s in steps)]
        if len(pullable) < num_boxes or len(cells) < 2 * num_boxes + 2:
            continue
        for _ in range(_RESTARTS):
            targets = rng.sample(pullable, num_boxes)
            player = rng.choice([i for i in cells if i not in targets])
            level, displacement = _pull_boxes(rows, cols, floor, targets, player, max_moves, rng)
            if level is not None and displacement > num_boxes:
                return level
    raise LevelGenerationError(
        f"Could not make a {rows}x{cols} level with {num_boxes} boxes solvable in {max_moves} moves "
        f"after {tries} tries; use a larger room, fewer boxes or more turns."
    )


def _carve_room(rows: int, cols: int, steps: int, rng: random.Random) -> bytearray:
    """Floor carved by a random walk inside a one-cell wall border."""
    floor = bytearray(rows * cols)
    r, c = rng.randint(1, rows - 2), rng.randint(1, cols - 2)
    dr, dc = rng.choice(_STEPS)
    for _ in range(steps):
        if rng.random() < 0.35:
            dr, dc = rng.choice(_STEPS)
        r = min(max(r + dr, 1), rows - 2)
        c = min(max(c + dc, 1), cols - 2)
        for sr, sc in rng.choice(_SHAPES):
            rr, cc = r + sr, c + sc
            if 0 < rr < rows - 1 and 0 < cc < cols - 1:
                floor[rr * cols + cc] = 1
    return floor


def _distances(start: int, floor: bytes, blocked: set[int], cols: int) -> dict[int, int]:
    """Shortest walking distance from ``start`` to every reachable cell."""
    dist = {start: 0}
    frontier = [start]
    steps = (-cols, cols, -1, 1)
    d = 0
    while frontier:
        d += 1
        nxt = []
        for cell in frontier:
            for s in steps:
                n = cell + s
                if floor[n] and n not in dist and n not in blocked:
                    dist[n] = d
                    nxt.append(n)
        frontier = nxt
    return dist


def _pull_boxes(
    rows: int, cols: int, floor: bytes, targets: list[int], player: int, max_moves: int, rng: random.Random
) -> tuple[Level | None, int]:
    """Play a random reversed game; return the most scrambled state with every box off target
    whose forward solution fits in ``max_moves``, and its total box displacement."""
    origin = {box: box for box in targets}  # current cell -> the target it started on
    target_set = frozenset(targets)
    steps = (-cols, cols, -1, 1)
    cost = 0  # forward moves to solve from the current state
    best: Level | None = None
    best_score = 0
    first = True
    while True:
        boxes = set(origin)
        reach = _distances(player, floor, boxes, cols)
        pulls = [
            (box, s)
            for box in boxes
            for s in steps
            if box + s in reach and floor[box + 2 * s] and box + 2 * s not in boxes
        ]
        if not pulls:
            break
        on_target = [pull for pull in pulls if pull[0] in target_set]
        box, s = rng.choice(on_target if on_target and rng.random() < _PREFER_ON_TARGET else pulls)
        walk = 0 if first else reach[box + s]  # the walk before the first pull is never replayed
        first = False
        if cost + walk + 1 > max_moves:
            break
        cost += walk + 1
        origin[box + s] = origin.pop(box)
        player = box + 2 * s
        if target_set.isdisjoint(origin):
            score = sum(abs(c // cols - t // cols) + abs(c % cols - t % cols) for c, t in origin.items())
            if score >= best_score:
                best_score = score
                best = Level(rows, cols, floor, target_set, frozenset(origin), player, cost)
    return best, best_score

"""Tower of Hanoi: move a stack of disks from tower A to tower C."""

from __future__ import annotations

import re
from functools import cache

from gem_envs.game.base import GameEnv, Outcome, Reward, check_positive, ListedMoves

#: (num_disks, max_turns) drawn per episode by the -random variant.
RANDOM_SETTINGS = ((3, 10), (4, 20), (5, 35))
TOWERS = "ABC"

_MOVE = re.compile(r"([ABC])\s*(?:,|->|to|\s)\s*([ABC])|([ABC])([ABC])", re.IGNORECASE)


class TowerofHanoiEnv(GameEnv):
    """Move ``num_disks`` disks from tower A to tower C within ``max_turns``, one top disk per
    turn, never a larger disk on a smaller one.

    Moves are ``SOURCE TARGET`` (e.g. ``A C``). Finishing earns 1; a move from an empty tower,
    onto a smaller disk, or onto the same tower is invalid. At the turn limit the reward is the
    share of disks on tower C. Any None setting draws ``(num_disks, max_turns)`` per episode from
    :data:`RANDOM_SETTINGS`.
    """

    action_format = "\\boxed{SOURCE TARGET}, e.g. \\boxed{A C}"
    listed = ListedMoves.of((f"{a} {b}", (a, b)) for a in TOWERS for b in TOWERS if a != b)

    def __init__(self, num_disks: int | None = 3, max_turns: int | None = 100):
        self.random_settings = num_disks is None or max_turns is None
        if not self.random_settings:
            check_positive("num_disks", num_disks)
            check_positive("max_turns", max_turns)
        self.num_disks = num_disks or 3
        self.max_turns = max_turns or 10
        self.towers: dict[str, list[int]] = {t: [] for t in TOWERS}

    def new_game(self) -> None:
        if self.random_settings:
            self.num_disks, self.max_turns = self.rng.choice(RANDOM_SETTINGS)
        self.towers = {"A": list(range(self.num_disks, 0, -1)), "B": [], "C": []}

    def instructions(self) -> str:
        return _instructions(self.num_disks, self.max_turns)

    def task_suffix(self) -> str:
        return f"Here are the towers:\n{self.render()}\nEnter your move."

    def render(self) -> str:
        towers = self.towers
        return f"A: {towers['A']}\nB: {towers['B']}\nC: {towers['C']}"

    def parse_move(self, answer: str) -> tuple[str, str] | None:
        match = _MOVE.fullmatch(answer)
        if match is None:
            return None
        source, target = (match[1], match[2]) if match[1] else (match[3], match[4])
        return source.upper(), target.upper()

    def play(self, move: tuple[str, str]) -> tuple[str, float, Outcome]:
        source, target = move
        towers = self.towers
        if source == target:
            return f"Turn {self.turn}: a disk must move to another tower.", Reward.INVALID, Outcome.INVALID
        if not towers[source]:
            return f"Turn {self.turn}: tower {source} is empty.", Reward.INVALID, Outcome.INVALID
        disk = towers[source][-1]
        if towers[target] and towers[target][-1] < disk:
            return (
                f"Turn {self.turn}: disk {disk} cannot go on the smaller disk {towers[target][-1]} of tower {target}.",
                Reward.INVALID, Outcome.INVALID,
            )
        towers[target].append(towers[source].pop())
        self._suffix = None
        if len(towers["C"]) == self.num_disks:
            return f"All disks are on tower C after {self.turn} turns. You win!", Reward.SUCCESS, Outcome.WON
        return f"Turn {self.turn}: you moved disk {disk} from {source} to {target}.", Reward.STEP, Outcome.ONGOING

    def reward_at_turn_limit(self, reward: float) -> float:
        return len(self.towers["C"]) / self.num_disks


@cache
def _instructions(disks: int, turns: int) -> str:
    return (
        f"Let's play Tower of Hanoi with {disks} disks.\n"
        "All disks start on tower A, largest at the bottom. Move them all to tower C within "
        f"{turns} turns. Each turn, move the top disk of one tower onto another; a "
        "disk may never sit on a smaller one.\n"
        "Write a move as \\boxed{SOURCE TARGET}, e.g. \\boxed{A C} moves the top disk of A onto C. "
        "Towers are listed bottom to top. Only the last \\boxed{} counts."
    )

"""Sokoban: push every box onto a target."""

from __future__ import annotations

from gem_envs.game.base import GameEnv, GameSettingsError, Outcome, Reward, check_positive, pick
from gem_envs.game.sokoban_levels import Level, LevelGenerationError, generate_level

#: (dim_room, num_boxes, max_turns) drawn per episode by the -random variant.
RANDOM_SETTINGS = (((6, 6), 2, 20), ((8, 8), 5, 50))
DIRECTIONS = ("up", "down", "left", "right")


class SokobanEnv(GameEnv):
    """Push ``num_boxes`` boxes onto targets in a ``dim_room`` (rows, cols) room within
    ``max_turns``.

    Levels are generated backwards from the solved state, so each one is solvable within
    ``max_turns`` moves and starts with no box on a target. The player moves up, down, left or
    right and pushes a box by walking into it; boxes cannot be pulled or pushed into a wall or
    another box (invalid moves). Solving earns 1. At the turn limit the reward is the share of
    boxes on targets. Any None setting draws ``(dim_room, num_boxes, max_turns)`` per episode
    from :data:`RANDOM_SETTINGS`.
    """

    action_format = "\\boxed{up}, \\boxed{down}, \\boxed{left} or \\boxed{right}"

    def __init__(self, dim_room: tuple[int, int] | None = (6, 6), max_turns: int | None = 100, num_boxes: int | None = 3):
        self.random_settings = dim_room is None or max_turns is None or num_boxes is None
        if not self.random_settings:
            if not (isinstance(dim_room, (tuple, list)) and len(dim_room) == 2
                    and all(isinstance(d, int) and d >= 4 for d in dim_room)):
                raise GameSettingsError(f"dim_room must be (rows, cols), each at least 4, got {dim_room!r}.")
            check_positive("num_boxes", num_boxes)
            check_positive("max_turns", max_turns)
            dim_room = (dim_room[0], dim_room[1])
        self.dim_room, self.num_boxes, self.max_turns = (
            RANDOM_SETTINGS[0] if self.random_settings else (dim_room, num_boxes, max_turns)
        )
        self.rows, self.cols = self.dim_room
        self.floor = b""
        self.targets: frozenset[int] = frozenset()
        self.boxes: set[int] = set()
        self.player = 0
        self.solution_length = 0
        self._room: list[str] = []

    def new_game(self) -> None:
        if self.random_settings:
            self.dim_room, self.num_boxes, self.max_turns = self.rng.choice(RANDOM_SETTINGS)
        rows, cols = self.dim_room
        try:
            level = generate_level(rows, cols, self.num_boxes, self.max_turns, self.rng)
        except LevelGenerationError as e:
            raise GameSettingsError(str(e)) from None
        self.set_level(level)

    def set_level(self, level: Level) -> None:
        """Play ``level`` (e.g. one made by hand) from its start; the turn count is kept."""
        self.rows, self.cols = level.rows, level.cols
        self.floor, self.targets, self.player = level.floor, level.targets, level.player
        self.boxes = set(level.boxes)
        self.num_boxes = len(level.boxes)
        self.solution_length = level.solution_length
        # the fixed part of the board: walls, floor and targets
        self._room = ["#" if not f else "O" if i in self.targets else "_" for i, f in enumerate(self.floor)]
        self._suffix = None

    def instructions(self) -> str:
        return (
            "Let's play Sokoban.\n"
            "You are the player in a walled room. Push every box onto a target within "
            f"{self.max_turns} turns. Walk into a box to push it one cell; you cannot pull boxes, "
            "and you cannot push a box into a wall or another box.\n"
            "On the board: 'P' is you, 'S' is you standing on a target, '#' a wall, '_' floor, "
            "'O' an empty target, 'X' a box and '√' a box on a target.\n"
            "Put your move in \\boxed{}: \\boxed{up}, \\boxed{down}, \\boxed{left} or \\boxed{right}. "
            "Only the last \\boxed{} counts."
        )

    def task_suffix(self) -> str:
        return f"Here is the board:\n{self.render()}\nEnter your move."

    def render(self) -> str:
        cells = list(self._room)
        targets = self.targets
        for box in self.boxes:
            cells[box] = "√" if box in targets else "X"
        cells[self.player] = "S" if self.player in targets else "P"
        cols = self.cols
        return "\n".join([" ".join(cells[i:i + cols]) for i in range(0, len(cells), cols)])

    def parse_move(self, answer: str) -> str | None:
        move = answer.lower()
        return move if move in DIRECTIONS else None

    def play(self, move: str) -> tuple[str, float, Outcome]:
        step = (-self.cols, self.cols, -1, 1)[DIRECTIONS.index(move)]
        ahead = self.player + step
        if not self.floor[ahead]:
            return f"Turn {self.turn}: you cannot move {move} into a wall.", Reward.INVALID, Outcome.INVALID
        pushed = ahead in self.boxes
        if pushed:
            beyond = ahead + step
            if not self.floor[beyond] or beyond in self.boxes:
                return (
                    f"Turn {self.turn}: the box {move} of you is blocked by a wall or another box.",
                    Reward.INVALID, Outcome.INVALID,
                )
            self.boxes.remove(ahead)
            self.boxes.add(beyond)
        self.player = ahead
        self._suffix = None
        if self.boxes <= self.targets:
            return f"Every box is on a target after {self.turn} turns. You win!", Reward.SUCCESS, Outcome.WON
        what = "pushed a box" if pushed else "moved"
        return f"Turn {self.turn}: you {what} {move}.", Reward.STEP, Outcome.ONGOING

    def reward_at_turn_limit(self, reward: float) -> float:
        return len(self.boxes & self.targets) / self.num_boxes

    def random_move(self) -> str:
        return pick(self.action_rng, DIRECTIONS)

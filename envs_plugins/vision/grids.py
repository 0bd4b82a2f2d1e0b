"""ReasoningGym grid tasks drawn as images, scored by ReasoningGym.

Each id takes one reasoning-gym dataset; its text grid is drawn with Pillow and the question is
rewritten to refer to the image (the grid is not in the text). Scoring and the format penalty
are those of :class:`~gem_envs.rg.env.ReasoningGymEnv`, with one difference: the reward is 1
when ReasoningGym scores the content of the last ``\\boxed{}`` fully correct and 0 otherwise
(``info["score"]`` keeps its partial credit); 0 with ``info["format_error"]`` when there is no
``\\boxed{}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gem_core.errors import GemError
from gem_core.images import IMAGE

from gem_envs.rg.env import INSTRUCTION, ReasoningGymEnv
from gem_envs.vision.draw import canvas, label

WALL, START, GOAL = (60, 60, 60), (0, 170, 0), (220, 0, 0)


def draw_maze(entry: Mapping[str, Any]) -> Any:
    """Walls dark, passages white, the start green and the goal red; 20-pixel cells."""
    meta, cell = entry["metadata"], 20
    grid = meta["grid"]
    image, draw = canvas(cell * len(grid[0]), cell * len(grid))
    colours = {meta["wall"]: WALL, meta["start"]: START, meta["goal"]: GOAL}
    for row, line in enumerate(grid):
        for col, char in enumerate(line):
            if char in colours:
                draw.rectangle([col * cell, row * cell, (col + 1) * cell - 1, (row + 1) * cell - 1], fill=colours[char])
    return image


def draw_mini_sudoku(entry: Mapping[str, Any]) -> Any:
    """A 4x4 grid of 40-pixel cells with the given numbers; thick lines around the 2x2 boxes."""
    puzzle, cell, margin = entry["metadata"]["puzzle"], 40, 4
    image, draw = canvas(4 * cell + 2 * margin, 4 * cell + 2 * margin)
    for i in range(5):
        width = 3 if i % 2 == 0 else 1
        at = margin + i * cell
        draw.line([(margin, at), (margin + 4 * cell, at)], fill=(0, 0, 0), width=width)
        draw.line([(at, margin), (at, margin + 4 * cell)], fill=(0, 0, 0), width=width)
    for row, numbers in enumerate(puzzle):
        for col, number in enumerate(numbers):
            if number:
                label(draw, (margin + (col + 0.5) * cell, margin + (row + 0.5) * cell), str(number), size=24)
    return image


def draw_rectangle_count(entry: Mapping[str, Any]) -> Any:
    """The outlines of the ASCII puzzle, each character a 3-pixel square."""
    lines, cell = entry["metadata"]["puzzle"].split("\n"), 3
    image, draw = canvas(cell * max(len(line) for line in lines), cell * len(lines))
    for row, line in enumerate(lines):
        for col, char in enumerate(line):
            if not char.isspace():
                draw.rectangle([col * cell, row * cell, (col + 1) * cell - 1, (row + 1) * cell - 1], fill=(0, 0, 0))
    return image


#: reasoning-gym dataset -> (drawing, question about the image)
GRID_TASKS: dict[str, tuple[Callable[[Mapping[str, Any]], Any], str]] = {
    "maze": (draw_maze, "The image shows a maze: dark cells are walls, white cells are passages. What is the "
             "minimum number of steps from the green cell to the red cell, moving up, down, left or right?"),
    "mini_sudoku": (draw_mini_sudoku, "Solve the 4x4 Mini Sudoku in the image: each row, each column and each "
                    "2x2 box holds the numbers 1 to 4 once. Give the solved grid as four lines of four numbers "
                    "separated by spaces."),
    "rectangle_count": (draw_rectangle_count, "How many rectangles are outlined in the image? Rectangles may "
                        "overlap; count each one."),
}


class ReasoningGymGridEnv(ReasoningGymEnv):
    """A reasoning-gym grid task (``name``, one of :data:`GRID_TASKS`) shown as an image.

    The other options are those of :class:`~gem_envs.rg.env.ReasoningGymEnv`.
    """

    def __init__(self, name: str, size: int = 500, seed: int = 42, *, config: Mapping[str, Any] | None = None,
                 shuffle: bool = True, time_limit: float = 5.0, instruction: str = INSTRUCTION):
        if name not in GRID_TASKS:
            raise GemError(f"No drawing for reasoning-gym task {name!r}; the grid tasks drawn as images are "
                           f"{', '.join(GRID_TASKS)}.")
        super().__init__(name, size, seed, config=config, shuffle=shuffle, time_limit=time_limit,
                         instruction=instruction)
        self.image: Any = None

    def load_problem(self, index: int) -> str:
        super().load_problem(index)
        drawing, question = GRID_TASKS[self.name]
        self.image = drawing(self.entry)
        return f"{IMAGE}\n{question}"

    def _finish(self, answer: str | None, outcome: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observation, _, terminated, truncated, info = super()._finish(answer, outcome)
        return observation, 1.0 if info["correct"] else 0.0, terminated, truncated, info

    def reset(self, seed: int | None = None, index: int | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        observation, info = super().reset(seed, index=index, **options)
        return observation, {**info, "images": [self.image]}

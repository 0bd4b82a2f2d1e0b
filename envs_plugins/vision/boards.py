"""Language games shown as pictures: the ``board_image`` wrapper draws the board a game puts in
``info["suffix"]`` as an image each turn, so a multi-turn game becomes a visual task.

The suffix's last line (what to do next) stays text; the lines above it (the board) become a
white RGB image drawn in fixed-width cells (``cell`` pixels wide, twice that tall), the text
shows ``<image>`` in their place, and the image goes to ``info["images"]``. Once the episode is
over no board is shown (as for text boards), so the last observation has no image. The same
state gives the same image, byte for byte.
"""

from __future__ import annotations

from typing import Any

from gem_core.core import Env, ResetResult, StepResult
from gem_core.images import IMAGE
from gem_core.core import ResultWrapper

from gem_envs.vision.draw import INK, canvas, font


def draw_board(lines: list[str], cell: int = 12) -> Any:
    """The lines as a picture: one character per fixed-width cell."""
    width = max(len(line) for line in lines) if lines else 1
    image, draw = canvas(cell * width + cell, 2 * cell * len(lines) + cell)
    glyphs = font(int(cell * 1.4))
    for row, line in enumerate(lines):
        for column, char in enumerate(line):
            if not char.isspace():
                draw.text((cell // 2 + column * cell + cell / 2, cell // 2 + row * 2 * cell + cell),
                          char, font=glyphs, fill=INK, anchor="mm")
    return image


class BoardImage(ResultWrapper):
    """See the module documentation."""

    def __init__(self, env: Env, *, cell: int = 12):
        super().__init__(env)
        self.cell = cell

    def on_reset(self, observation: str, info: dict[str, Any]) -> ResetResult:
        return observation, self._pictured(info)

    def on_step(self, action: str, result: StepResult) -> StepResult:
        observation, reward, terminated, truncated, info = result
        return observation, reward, terminated, truncated, info if terminated or truncated else self._pictured(info)

    def _pictured(self, info: dict[str, Any]) -> dict[str, Any]:
        suffix = info.get("suffix")
        if not isinstance(suffix, str) or "\n" not in suffix.strip("\n"):
            return info
        *board, prompt = suffix.strip("\n").split("\n")
        return {**info, "suffix": f"{IMAGE}\n{prompt}", "images": [draw_board(board, self.cell)]}


def board_image(env: Env, *, cell: int = 12) -> BoardImage:
    """A game's board drawn as an image each turn (see :mod:`gem_envs.vision.boards`)."""
    return BoardImage(env, cell=cell)

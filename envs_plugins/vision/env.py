"""Single-turn visual tasks whose answer is a number: a figure is drawn per episode, the
response's last ``\\boxed{}`` is graded (see :mod:`gem_envs.vision.answers`), the episode ends.

The observation is ``<image>``, a line break, the question and the instruction; the image (RGB,
PNG-encodable) is in ``info["images"]``. ``reset(seed)`` draws the task from the seed alone, so
the same seed gives the same image, byte for byte.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

from gem_core import Env
from gem_core.errors import GemError, MissingDependencyError
from gem_core.images import IMAGE

from gem_envs.vision.answers import boxed_number
from gem_envs.vision.draw import canvas, label

INSTRUCTION = "Put your final answer (a number) within \\boxed{}."


class VisualTaskEnv(Env):
    """Base class: :meth:`draw_task` returns ``(image, question, answer)`` for the episode."""

    def __init__(self, instruction: str = INSTRUCTION):
        if not isinstance(instruction, str):
            raise GemError(f"instruction must be a string, got {type(instruction).__name__}.")
        self.instruction = instruction
        self.answer: Fraction | None = None
        self.done = True

    def draw_task(self) -> tuple[Any, str, Fraction]:
        """A new task drawn with :attr:`rng`: the image, the question and the answer."""
        raise NotImplementedError

    def reset(self, seed: int | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        image, question, self.answer = self.draw_task()
        self.done = False
        text = f"{IMAGE}\n{question}" + (f"\n\n{self.instruction}" if self.instruction else "")
        return text, {"images": [image]}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.answer is None or self.done:
            raise GemError(f"{self!r}: call reset() before step() (one answer per task).")
        self.done = True
        given = boxed_number(action)
        correct = given is not None and given == self.answer
        info = {"correct": correct, "format_error": given is None, "answer": _written(self.answer)}
        if given is None:
            observation = "No answer found: put the final answer (a number) within \\boxed{}."
        else:
            observation = "Correct." if correct else "Incorrect."
        return observation, 1.0 if correct else 0.0, True, False, info

    def sample_random_action(self) -> str:
        return f"\\boxed{{{self.action_rng.randint(0, 100)}}}"


def _written(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else str(value)


TRIPLES = ((3, 4, 5), (5, 12, 13), (8, 15, 17), (7, 24, 25), (20, 21, 29), (9, 40, 41))
SIZE = 256


class GeometryEnv(VisualTaskEnv):
    """A figure with labelled lengths or angles; the answer is computed from them.

    Kinds: the hypotenuse of a right triangle, the area or perimeter of a rectangle, the third
    angle of a triangle. Images are 256x256 RGB.
    """

    KINDS = ("hypotenuse", "area", "perimeter", "angle")

    def draw_task(self) -> tuple[Any, str, Fraction]:
        kind = self.rng.choice(self.KINDS)
        if kind == "hypotenuse":
            return self._right_triangle()
        if kind == "angle":
            return self._triangle_angles()
        return self._rectangle(kind)

    def _right_triangle(self) -> tuple[Any, str, Fraction]:
        a, b, c = self.rng.choice(TRIPLES)
        k = self.rng.randint(1, 3)
        if self.rng.random() < 0.5:
            a, b = b, a
        scale = (SIZE - 80) / max(a, b)
        x0, y0 = 40, SIZE - 40
        corner, right, top = (x0, y0), (x0 + a * scale, y0), (x0, y0 - b * scale)
        image, draw = canvas(SIZE, SIZE)
        draw.polygon([corner, right, top], outline=(0, 0, 0), width=2)
        draw.rectangle([x0, y0 - 12, x0 + 12, y0], outline=(0, 0, 0))  # the right-angle mark
        label(draw, ((corner[0] + right[0]) / 2, y0 + 16), str(a * k))
        label(draw, (x0 - 18, (corner[1] + top[1]) / 2), str(b * k))
        label(draw, ((right[0] + top[0]) / 2 + 14, (right[1] + top[1]) / 2 - 10), "x", fill=(200, 0, 0))
        return image, "The triangle has a right angle. What is the length x?", Fraction(c * k)

    def _rectangle(self, kind: str) -> tuple[Any, str, Fraction]:
        width, height = self.rng.randint(2, 15), self.rng.randint(2, 15)
        scale = (SIZE - 80) / max(width, height)
        w, h = max(width * scale, 30), max(height * scale, 30)
        x0, y0 = (SIZE - w) / 2, (SIZE - h) / 2
        image, draw = canvas(SIZE, SIZE)
        draw.rectangle([x0, y0, x0 + w, y0 + h], outline=(0, 0, 0), width=2)
        label(draw, (x0 + w / 2, y0 + h + 16), str(width))
        label(draw, (x0 - 18, y0 + h / 2), str(height))
        answer = width * height if kind == "area" else 2 * (width + height)
        return image, f"What is the {kind} of the rectangle?", Fraction(answer)

    def _triangle_angles(self) -> tuple[Any, str, Fraction]:
        a = self.rng.randint(30, 100)
        b = self.rng.randint(30, 150 - a)
        c = 180 - a - b
        # Vertices from the angles: base from A to B, C where the two sides meet (law of sines).
        side_ac = math.sin(math.radians(b)) / math.sin(math.radians(c))
        points = [(0.0, 0.0), (1.0, 0.0), (side_ac * math.cos(math.radians(a)), side_ac * math.sin(math.radians(a)))]
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        scale = (SIZE - 80) / max(max(xs) - min(xs), max(ys) - min(ys))
        place = [(40 + (x - min(xs)) * scale, SIZE - 40 - (y - min(ys)) * scale) for x, y in points]
        image, draw = canvas(SIZE, SIZE)
        draw.polygon(place, outline=(0, 0, 0), width=2)
        cx, cy = sum(p[0] for p in place) / 3, sum(p[1] for p in place) / 3
        for (x, y), text in zip(place, (f"{a}°", f"{b}°", "x")):
            # labels sit inside the triangle, a little way from their vertex
            label(draw, (x + (cx - x) * 0.3, y + (cy - y) * 0.3), text, fill=(200, 0, 0) if text == "x" else (0, 0, 0))
        return image, "What is the angle x, in degrees?", Fraction(c)


@functools.lru_cache(maxsize=1)
def handwritten_digits() -> tuple[Any, Any]:
    """scikit-learn's 1,797 handwritten digits (8x8, ink 0-16) and their labels; shipped with
    the package, so offline."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise MissingDependencyError("The handwritten-digit environments", "scikit-learn", "vision") from None
    digits = load_digits()
    return digits.images, digits.target


DIGIT_PIXELS = 32
OPERATORS = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "×": lambda x, y: x * y}


class DigitArithmeticEnv(VisualTaskEnv):
    """Arithmetic written in handwritten digits: ``a op b`` with ``a`` and ``b`` of one or two
    digits each, drawn from scikit-learn's digits dataset (each digit scaled to 32x32), and the
    operator printed. The answer is computed from the digits' true labels. Images are RGB, 32
    pixels high plus a margin of 8 on each side.
    """

    def __init__(self, max_digits: int = 2, instruction: str = INSTRUCTION):
        super().__init__(instruction)
        if isinstance(max_digits, bool) or not isinstance(max_digits, int) or not 1 <= max_digits <= 4:
            raise GemError(f"max_digits must be an integer from 1 to 4, got {max_digits!r}.")
        self.max_digits = max_digits
        handwritten_digits()  # fail at construction when scikit-learn is missing

    def draw_task(self) -> tuple[Any, str, Fraction]:
        from PIL import Image

        images, labels = handwritten_digits()
        operator = self.rng.choice(sorted(OPERATORS))
        glyphs: list[Any] = []
        operands = []
        for position in range(2):
            value = 0
            for _ in range(self.rng.randint(1, self.max_digits)):
                index = self.rng.randrange(len(labels))
                value = value * 10 + int(labels[index])
                ink = (255 - images[index] * (255 / 16)).astype("uint8")
                glyphs.append(Image.fromarray(ink, "L").resize((DIGIT_PIXELS, DIGIT_PIXELS), Image.NEAREST))
            operands.append(value)
            if position == 0:
                glyphs.append(operator)
        margin = 8
        image, draw = canvas(2 * margin + DIGIT_PIXELS * len(glyphs), 2 * margin + DIGIT_PIXELS)
        for slot, glyph in enumerate(glyphs):
            x = margin + slot * DIGIT_PIXELS
            if isinstance(glyph, str):
                label(draw, (x + DIGIT_PIXELS / 2, margin + DIGIT_PIXELS / 2), glyph, size=24)
            else:
                image.paste(glyph.convert("RGB"), (x, margin))
        answer = OPERATORS[operator](*operands)
        return image, "The image shows a calculation written by hand. What is its result?", Fraction(answer)

"""Geometry3K: geometry problems with a diagram each, graded by the math grader.

The rows have a ``problem`` (text with an ``<image>`` placeholder), an ``answer`` and
``images`` (a list of images). The data options are the shared ones of
:func:`gem_envs.data.load_rows`; ``image_key`` names the image column. Images may be PIL images,
``{"bytes": ...}`` or ``{"path": ...}`` records (as ``datasets`` stores them), raw bytes or file
paths; they are decoded when their episode starts and converted to RGB.
"""

from __future__ import annotations

import io
import os
from typing import Any

from gem_core.errors import GemError, MissingDependencyError
from gem_core.images import IMAGE

from gem_envs.data import load_rows
from gem_envs.math import grading
from gem_envs.math.data import read_problems
from gem_envs.math.env import MathProblemsEnv
from gem_envs.question import DEFAULT_INSTRUCTION

DATASET = "hiyouga/geometry3k"


class VisualMathEnv(MathProblemsEnv):
    """Math problems with images from a Hugging Face dataset, a local copy of one, or given rows.

    Rewards are those of the math environments (1 correct, 0 wrong, 0 with
    ``info["format_error"]`` without a complete ``\\boxed{}``). The observation is the problem
    text, with one :data:`~gem_core.images.IMAGE` placeholder per image (added in front when the
    text has none), and the instruction; ``info["images"]`` holds the images.
    """

    def __init__(self, dataset_name: str | None = DATASET, split: str | None = "train", *,
                 path: str | os.PathLike[str] | None = None, dataset: Any = None,
                 question_key: str = "problem", answer_key: str = "answer", image_key: str = "images",
                 shuffle: bool = True, time_limit: float = grading.DEFAULT_TIME_LIMIT,
                 instruction: str = DEFAULT_INSTRUCTION, env_id: str | None = None):
        self.env_id = env_id or "a visual math environment"
        self.image_key = image_key
        self.rows = load_rows(self.env_id, dataset_name=dataset_name, split=split, path=path, dataset=dataset,
                              columns={"question_key": question_key, "answer_key": answer_key,
                                       "image_key": image_key})
        problems = read_problems(self.env_id, question_key, answer_key, dataset=self.rows)
        super().__init__(problems, shuffle=shuffle, time_limit=time_limit, instruction=instruction)
        self.images: list[Any] = []

    def load_problem(self, index: int) -> str:
        question = super().load_problem(index)
        self.images = _images(self.rows[index][self.image_key], self.env_id, index)
        if question.count(IMAGE) != len(self.images):
            question = IMAGE * len(self.images) + "\n" + question.replace(IMAGE, "").lstrip()
        return question

    def reset(self, seed: int | None = None, index: int | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        observation, info = super().reset(seed, index=index, **options)
        return observation, {**info, "images": list(self.images)}


def _images(value: Any, env_id: str, row: int) -> list[Any]:
    try:
        from PIL import Image
    except ImportError:
        raise MissingDependencyError(f"{env_id}'s images", "Pillow", "vision") from None
    values = value if isinstance(value, (list, tuple)) else [] if value is None else [value]
    images = []
    for item in values:
        if isinstance(item, dict):
            item = item.get("bytes") or item.get("path")
        try:
            if isinstance(item, (bytes, bytearray)):
                item = Image.open(io.BytesIO(item))
            elif isinstance(item, (str, os.PathLike)):
                item = Image.open(item)
            if not isinstance(item, Image.Image):
                raise TypeError(f"a {type(item).__name__} is not an image")
            images.append(item.convert("RGB"))
        except (OSError, TypeError, ValueError) as e:
            raise GemError(f"{env_id}: row {row} has an image that cannot be read ({e}); images must be PIL "
                           "images, {'bytes': ...} or {'path': ...} records, bytes or file paths.") from e
    return images

"""Drawing helpers: white RGB canvases, a fixed font, centred labels, and the PNG of a figure.

Figures depend only on their inputs (and the Pillow version), never on global state, so the
same seed gives the same PNG bytes.
"""

from __future__ import annotations

import functools
from typing import Any

INK = (0, 0, 0)
PAPER = (255, 255, 255)


def canvas(width: int, height: int) -> tuple[Any, Any]:
    """A white RGB image and a drawing context on it."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (width, height), PAPER)
    return image, ImageDraw.Draw(image)


@functools.lru_cache(maxsize=8)
def font(size: int = 16) -> Any:
    """Pillow's built-in font at ``size`` pixels (no font file needed)."""
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def label(draw: Any, xy: tuple[float, float], text: str, *, size: int = 16, fill: tuple[int, int, int] = INK) -> None:
    """``text`` centred on ``xy``."""
    draw.text(xy, text, font=font(size), fill=fill, anchor="mm")

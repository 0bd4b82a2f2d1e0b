"""Images in observations.

Observations stay strings, so every wrapper, vector environment and adapter keeps working. A
visual environment marks where each image goes with :data:`IMAGE` (``"<image>"``) in the
observation text and puts the images, in the same order, in ``info["images"]`` (PIL images).
The observation wrappers carry them across turns: their ``info["images"]`` holds every image of
the observation they render.

:func:`chat_message` turns one observation into a chat message with ``{"type": "image",
"image": ...}`` content parts, the form transformers' processors (Qwen2-VL, Qwen2.5-VL,
Idefics3, ...) accept; :func:`openai_message` turns such a message into the form
OpenAI-compatible servers accept (``image_url`` parts with PNG data URLs).

Pillow is imported only by the functions that encode images.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from typing import Any

from gem_core.errors import GemError

#: Marks where an image goes in an observation.
IMAGE = "<image>"


def images_of(info: Mapping[str, Any]) -> list[Any]:
    """The images of an observation: ``info["images"]``, or an empty list."""
    images = info.get("images")
    return list(images) if images else []


def content_parts(text: str, images: Sequence[Any]) -> list[dict[str, Any]]:
    """``text`` split at its :data:`IMAGE` placeholders into text and image content parts."""
    pieces = text.split(IMAGE)
    if len(pieces) - 1 != len(images):
        raise GemError(f"An observation has {len(pieces) - 1} {IMAGE} placeholder(s) but {len(images)} "
                       "image(s) in info['images']; a visual environment must give one image per placeholder.")
    parts: list[dict[str, Any]] = []
    for index, piece in enumerate(pieces):
        if piece:
            parts.append({"type": "text", "text": piece})
        if index < len(images):
            parts.append({"type": "image", "image": images[index]})
    return parts


def chat_message(role: str, text: str, images: Sequence[Any] = ()) -> dict[str, Any]:
    """A chat message: plain text content without images, content parts with them."""
    if not images:
        return {"role": role, "content": text}
    return {"role": role, "content": content_parts(text, images)}


def message_images(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Every image of ``messages``' content parts, in order (what a processor takes beside the
    rendered text)."""
    return [part["image"] for message in messages if isinstance(message["content"], list)
            for part in message["content"] if part.get("type") == "image"]


def png_bytes(image: Any) -> bytes:
    """``image`` (a PIL image) encoded as PNG."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def data_url(image: Any) -> str:
    """``image`` as a ``data:image/png;base64,...`` URL."""
    return "data:image/png;base64," + base64.b64encode(png_bytes(image)).decode("ascii")


def openai_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A chat message in the form OpenAI-compatible servers accept: image parts become
    ``{"type": "image_url", "image_url": {"url": <PNG data URL>}}``."""
    content = message["content"]
    if isinstance(content, list):
        content = [{"type": "image_url", "image_url": {"url": data_url(part["image"])}}
                   if part.get("type") == "image" else dict(part) for part in content]
    return {"role": message["role"], "content": content}

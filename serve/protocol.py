"""The messages of OpenEnv's wire protocol, as GEM fills them.

A client sends JSON text frames on ``/ws``: ``{"type": "reset", "data": {"seed": 3}}``,
``{"type": "step", "data": {"message": "<the action>"}}``, ``{"type": "state"}`` and
``{"type": "close"}``. The server answers each with ``{"type": "observation", "data": ...}``,
``{"type": "state", "data": ...}`` or ``{"type": "error", "data": {"message": ..., "code": ...}}``.

An observation's ``data`` (also the body of HTTP ``POST /reset``) is::

    {"observation": {"prompt": <the observation text>,
                     "metadata": {"env_id", "episode_id", "step_count", "terminated",
                                  "truncated", "info", "seed" (after a reset),
                                  "images" (PNG data URLs, one per <image> in the prompt),
                                  "fault" (the environment raised)}},
     "reward": <float, null after a reset>, "done": <terminated or truncated>}

``info`` is GEM's info dict made JSON-safe (numbers, strings, lists, objects; images leave it for
``images``). The action field is ``message`` and the text field ``prompt``, as in OpenEnv's echo and
TextArena environments.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Mapping
from typing import Any

from gem_core.errors import GemError

ACTION_FIELD = "message"
TEXT_FIELD = "prompt"

# Error codes, as OpenEnv's server names them.
INVALID_JSON = "INVALID_JSON"
UNKNOWN_TYPE = "UNKNOWN_TYPE"
VALIDATION_ERROR = "VALIDATION_ERROR"
EXECUTION_ERROR = "EXECUTION_ERROR"
CAPACITY_REACHED = "CAPACITY_REACHED"
FACTORY_ERROR = "FACTORY_ERROR"
SESSION_ERROR = "SESSION_ERROR"


class ProtocolError(GemError, ValueError):
    """A message that does not follow the protocol; ``code`` is OpenEnv's error code for it."""

    def __init__(self, message: str, code: str = VALIDATION_ERROR):
        super().__init__(message)
        self.code = code


def encode(message: Mapping[str, Any]) -> str:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))


def decode(raw: str | bytes) -> dict[str, Any]:
    """A received frame as a message object, or :class:`ProtocolError`."""
    try:
        message = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise ProtocolError(f"Invalid JSON: {e}", INVALID_JSON) from None
    if not isinstance(message, dict):
        raise ProtocolError(f"A message must be a JSON object, got {type(message).__name__}.")
    return message


def error(message: str, code: str, **details: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code, **details}}


def action_text(data: Any) -> str:
    """The action of a step message's ``data`` (``{"message": str, "metadata"?: object}``)."""
    if not isinstance(data, dict):
        raise ProtocolError(f'A step needs "data": {{"{ACTION_FIELD}": "<action text>"}}, got {_short(data)}.')
    text = data.get(ACTION_FIELD)
    if not isinstance(text, str):
        raise ProtocolError(f'A step\'s data needs "{ACTION_FIELD}": a string (the action text), got {_short(text)}.')
    extra = set(data) - {ACTION_FIELD, "metadata"}
    if extra:
        raise ProtocolError(f"Unknown field(s) in a step's data: {', '.join(sorted(map(str, extra)))} "
                            f'(an action is {{"{ACTION_FIELD}": str, "metadata": object}}).')
    return text


def reset_arguments(data: Any) -> tuple[int | None, str | None, dict[str, Any]]:
    """``(seed, episode_id, options)`` of a reset message's ``data``."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ProtocolError(f"A reset's data must be an object, got {_short(data)}.")
    options = dict(data)
    seed = options.pop("seed", None)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ProtocolError(f'"seed" must be an integer or null, got {_short(seed)}.')
    episode_id = options.pop("episode_id", None)
    if episode_id is not None and not isinstance(episode_id, str):
        raise ProtocolError(f'"episode_id" must be a string or null, got {_short(episode_id)}.')
    return seed, episode_id, options


def observation_data(text: str, reward: float | None, terminated: bool, truncated: bool,
                     info: Mapping[str, Any], **metadata: Any) -> dict[str, Any]:
    """The ``data`` of an observation reply (see the module documentation)."""
    info = dict(info)
    images = info.pop("images", None)
    metadata.update(terminated=terminated, truncated=truncated, info=jsonable(info))
    if images:
        metadata["images"] = [image_url(image) for image in images]
    return {"observation": {TEXT_FIELD: text, "metadata": metadata}, "reward": reward,
            "done": terminated or truncated}


def jsonable(value: Any) -> Any:
    """``value`` with everything JSON cannot carry turned into what it can (numpy numbers and
    arrays to numbers and lists, images to data URLs, other objects to their ``repr``)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(item) for item in value]
    if hasattr(value, "tolist") and type(value).__module__ == "numpy":
        return value.tolist()
    if hasattr(value, "save") and hasattr(value, "mode"):  # a PIL image
        return image_url(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return repr(value)


def image_url(image: Any) -> str:
    from gem_core.images import data_url

    return data_url(image)


def image_from_url(url: str) -> Any:
    """A PIL image from a ``data:image/...;base64,`` URL (needs Pillow)."""
    try:
        from PIL import Image
    except ImportError:
        from gem_core.errors import MissingDependencyError

        raise MissingDependencyError("Images of a remote environment", "PIL", "vision") from None
    header, _, payload = url.partition(",")
    if not header.startswith("data:image/") or ";base64" not in header:
        raise ProtocolError(f"An image must be a base64 data URL, got {url[:40]!r}.")
    image = Image.open(io.BytesIO(base64.b64decode(payload)))
    image.load()
    return image


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."

"""The gateway's JSON, through orjson: a long conversation's body, and the prompt ids sent to the
backend, cost tens of microseconds a call where the standard library's ``json`` takes a
millisecond or more (the gateway's latency would grow with the conversation)."""

from __future__ import annotations

import json
from typing import Any

from gem_core.errors import MissingDependencyError

_orjson = MissingDependencyError.require("orjson", feature="gem gateway", extra="gateway")


def read_json(raw: bytes | str) -> Any:
    """Parse JSON (a ``ValueError`` when it is not)."""
    try:
        return _orjson.loads(raw)
    except ValueError:
        return json.loads(raw)  # what orjson refuses and the standard library reads (NaN, Infinity)


def json_bytes(value: Any) -> bytes:
    """``value`` as UTF-8 JSON (non-string keys written as strings)."""
    return _orjson.dumps(value, option=_orjson.OPT_NON_STR_KEYS)


def json_response(content: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> Any:
    """A Starlette response holding ``content`` as JSON."""
    from starlette.responses import Response

    return Response(json_bytes(content), status_code=status_code, headers=headers, media_type="application/json")

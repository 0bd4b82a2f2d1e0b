"""A GEM environment played on a server that speaks OpenEnv's protocol (``remote:<url>`` ids).

``make("remote:http://host:8000")`` opens a WebSocket session on ``gem serve`` or on any OpenEnv
environment server; ``reset`` and ``step`` are messages on it, actions are text. Against
``gem serve`` the episode is the served environment's exactly: observation, reward, terminated,
truncated and info (images included) come back as they were. Against another OpenEnv server the
observation text is its ``observation_field`` (by default ``prompt``, or the observation's only
string field, or else the whole observation as JSON), ``terminated`` is its ``done``, and ``info``
holds its other fields.

Failures are clear errors (:class:`RemoteEnvError`): a server that cannot be reached or refuses
the token fails construction; a connection lost mid-episode, a reply that does not come within
``timeout`` seconds, or a served environment that raised fails ``step``, which a vector
environment records as a fault on that slot. ``reset`` opens a new session when the previous one
was lost.
"""

from __future__ import annotations

import json
import os
from typing import Any

from gem_core.core import Env, ResetResult, StepResult
from gem_core.errors import GemError
from gem_serve import protocol

TOKEN_ENV = "GEM_SERVE_TOKEN"


class RemoteEnvError(GemError):
    """The server could not be reached, closed the session, did not answer, or its environment
    failed."""


class RemoteEnv(Env):
    """An environment served over OpenEnv's protocol; see the module documentation.

    ``url``: the server (``http://``, ``https://``, ``ws://`` or ``wss://``; ``/ws`` is added).
    ``token``: sent as ``Authorization: Bearer``; by default the ``GEM_SERVE_TOKEN`` environment
    variable when it is set. ``action_field``: the action's field (``message``, as ``gem serve``,
    OpenEnv's echo and TextArena environments take). ``connect_timeout`` and ``timeout``: seconds
    to open a session and to wait for each reply.
    """

    blocking = True  # every call waits on the network

    def __init__(self, url: str | None = None, *, token: str | None = None, action_field: str = protocol.ACTION_FIELD,
                 observation_field: str | None = None, connect_timeout: float = 10.0, timeout: float = 300.0):
        if not url or not isinstance(url, str):
            raise GemError("A remote environment needs the server's address: make('remote:http://HOST:PORT').")
        self.url = url.rstrip("/")
        self.ws_url = _ws_url(self.url)
        self.token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        self.action_field, self.observation_field = action_field, observation_field
        self.connect_timeout, self.timeout = float(connect_timeout), float(timeout)
        self._ws: Any = None
        self._connect()

    # ---- the environment API ----------------------------------------------------------

    def reset(self, seed: int | None = None, **options: Any) -> ResetResult:
        super().reset(seed)
        data = {"seed": seed, **options} if seed is not None else dict(options)
        if self._ws is None:
            self._connect()
        try:
            reply = self._request({"type": "reset", "data": data})
        except _ConnectionLost:  # the server closed the old session (idle timeout, restart): open a new one
            self._connect()
            reply = self._request({"type": "reset", "data": data})
        observation, _, _, _, info = self._result(reply["data"])
        return observation, info

    def step(self, action: str) -> StepResult:
        if self._ws is None:
            raise RemoteEnvError(f"No session with {self.url}: reset() starts one.")
        return self._result(self._request({"type": "step", "data": {self.action_field: action}}).get("data"))

    def sample_random_action(self) -> str:
        """A random action drawn by the served environment (``gem serve`` only)."""
        if self._ws is None:
            raise RemoteEnvError(f"No session with {self.url}: reset() starts one.")
        try:
            reply = self._request({"type": "sample_action"})
        except RemoteEnvError as e:
            raise RemoteEnvError(f"{self.url} cannot sample actions ({e}); `gem serve` can.") from None
        return str(reply["data"][protocol.ACTION_FIELD])

    def clone(self) -> Env:
        raise GemError("A remote environment cannot be cloned: its state lives on the server. "
                       "Replay the episode from its seed instead.")

    def close(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            try:
                ws.send(protocol.encode({"type": "close"}))
            except Exception:  # noqa: BLE001 - already gone
                pass
            ws.close()

    # ---- the wire -----------------------------------------------------------------------

    def _connect(self) -> None:
        from gem_serve.server import load

        load("websockets", "A remote environment")
        from websockets.exceptions import InvalidStatus, WebSocketException
        from websockets.sync.client import connect

        self.close()
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        try:
            connection = connect(self.ws_url, open_timeout=self.connect_timeout, additional_headers=headers,
                                 compression=None, max_size=None, close_timeout=1)
            self._ws = connection.__enter__()  # entered as a context manager, which newer websockets require
        except InvalidStatus as e:
            status = e.response.status_code
            hint = (f" (set {TOKEN_ENV} or pass token=...)" if status in (401, 403) else "")
            raise RemoteEnvError(f"{self.url} refused the session: HTTP {status}{hint}.") from None
        except (OSError, TimeoutError, WebSocketException) as e:
            raise RemoteEnvError(f"Cannot reach the environment server at {self.url}: {type(e).__name__}: {e}") from None
        try:  # the server may refuse the session only now (capacity, an environment that failed to start)
            self._request({"type": "state"})
        except BaseException:
            self.close()
            raise

    def _request(self, message: dict[str, Any]) -> dict[str, Any]:
        from websockets.exceptions import ConnectionClosed

        ws = self._ws
        try:
            ws.send(protocol.encode(message))
            raw = ws.recv(timeout=self.timeout)
        except ConnectionClosed as e:
            self._ws = None
            reason = f"code {e.rcvd.code}: {e.rcvd.reason}" if e.rcvd and e.rcvd.reason else "no reason given"
            raise _ConnectionLost(f"The session with {self.url} was closed ({reason}): the server stopped or "
                                  "ended the session.") from None
        except TimeoutError:
            self.close()
            raise RemoteEnvError(f"{self.url} did not answer a {message['type']} within {self.timeout:g} s.") from None
        except OSError as e:
            self._ws = None
            raise _ConnectionLost(f"The connection to {self.url} failed: {type(e).__name__}: {e}") from None
        try:
            reply = protocol.decode(raw)
        except protocol.ProtocolError as e:
            raise RemoteEnvError(f"{self.url} sent a reply that is not valid: {e}") from None
        if reply.get("type") == "error":
            data = reply.get("data") if isinstance(reply.get("data"), dict) else {}
            raise RemoteEnvError(f"{self.url} answered a {message['type']} with an error: "
                                 f"{data.get('message', 'no message')} (code {data.get('code', 'unknown')}).")
        return reply

    def _result(self, data: Any) -> StepResult:
        if not isinstance(data, dict) or not isinstance(data.get("observation", {}), dict):
            raise RemoteEnvError(f"{self.url} sent an observation that is not valid: {str(data)[:80]}")
        fields = dict(data.get("observation") or {})
        metadata = fields.pop("metadata", None)
        metadata = metadata if isinstance(metadata, dict) else {}
        if "fault" in metadata:
            fault = metadata["fault"] if isinstance(metadata["fault"], dict) else {}
            raise RemoteEnvError(f"The environment served at {self.url} failed: {fault.get('error', fault)}")
        done = bool(data.get("done", False))
        terminated = bool(metadata.get("terminated", done))
        truncated = bool(metadata.get("truncated", False))
        reward = float(data.get("reward") or 0.0)
        text = self._text(fields)
        if isinstance(metadata.get("info"), dict):  # gem serve: the served environment's own info
            info = dict(metadata["info"])
            if metadata.get("images"):
                info["images"] = [protocol.image_from_url(url) for url in metadata["images"]]
        else:
            info = {key: value for key, value in fields.items() if key != (self.observation_field or protocol.TEXT_FIELD)}
            if metadata:
                info["metadata"] = metadata
        return text, reward, terminated, truncated, info

    def _text(self, fields: dict[str, Any]) -> str:
        if self.observation_field is not None:
            if self.observation_field not in fields:
                raise RemoteEnvError(f"The observation from {self.url} has no field {self.observation_field!r} "
                                     f"(it has: {', '.join(sorted(fields)) or 'none'}).")
            value = fields[self.observation_field]
            return value if isinstance(value, str) else json.dumps(value)
        if isinstance(fields.get(protocol.TEXT_FIELD), str):
            return fields[protocol.TEXT_FIELD]
        texts = [value for value in fields.values() if isinstance(value, str)]
        if len(texts) == 1:
            return texts[0]
        return json.dumps(fields, sort_keys=True)


class _ConnectionLost(RemoteEnvError):
    """The session's connection is gone."""


def _ws_url(url: str) -> str:
    for http, ws in (("http://", "ws://"), ("https://", "wss://")):
        if url.startswith(http):
            return ws + url[len(http):] + "/ws"
    if url.startswith(("ws://", "wss://")):
        return url + "/ws"
    raise GemError(f"A remote environment's address starts with http://, https://, ws:// or wss://, got {url!r}.")

"""Servers for the serve tests, all on 127.0.0.1 with a free port: ``gem serve`` as a process (the
command users run), a GEM or OpenEnv application in a thread of the test process, and an
environment defined with OpenEnv's own server classes."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("openenv", reason="OpenEnv's package (openenv-core) is installed by scripts/install_test_deps.sh")
uvicorn = pytest.importorskip("uvicorn")

from openenv.core.env_server import create_fastapi_app  # noqa: E402
from openenv.core.env_server.interfaces import Environment  # noqa: E402
from openenv.core.env_server.types import Action, Observation, State  # noqa: E402

START_TIMEOUT_S = 60


@contextmanager
def gem_serve(env_id: str, *options: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """``gem serve ENV_ID OPTIONS --port 0`` as a process; yields its URL and the process."""
    command = [sys.executable, "-m", "gem_core.cli", "serve", env_id, "--port", "0", *options]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = _read_url(process)
        yield url, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _read_url(process: subprocess.Popen) -> str:
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(START_TIMEOUT_S)
    line = result[0] if result else ""
    match = re.search(r"http://\S+", line)
    if not match:
        process.kill()
        raise AssertionError(f"gem serve did not start: {line!r} {process.stderr.read()[-2000:]!r}")
    return match.group(0)


@contextmanager
def in_thread(app: Any) -> Iterator[str]:
    """Serve the ASGI ``app`` with uvicorn in a thread of this process; yields its URL."""
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


# ---- an environment written with OpenEnv's own server classes --------------------------------

class CountAction(Action):
    word: str


class CountObservation(Observation):
    echoed: str
    length: int


class CountdownEnvironment(Environment):
    """Echoes each word; the reward is its length; the episode ends after ``TURNS`` words, or at
    once on the word ``stop``."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    TURNS = 3

    def __init__(self):
        super().__init__()
        self._state = State(episode_id=None, step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs) -> CountObservation:
        self._state = State(episode_id=episode_id or f"seed-{seed}", step_count=0)
        return CountObservation(echoed=f"start {seed}", length=0, done=False, reward=0.0)

    def step(self, action: CountAction, timeout_s=None, **kwargs) -> CountObservation:
        self._state.step_count += 1
        done = action.word == "stop" or self._state.step_count >= self.TURNS
        return CountObservation(echoed=action.word, length=len(action.word), done=done, reward=float(len(action.word)))

    @property
    def state(self) -> State:
        return self._state


def openenv_app(max_sessions: int = 8):
    """OpenEnv's own FastAPI application serving :class:`CountdownEnvironment`."""
    return create_fastapi_app(CountdownEnvironment, CountAction, CountObservation, max_concurrent_envs=max_sessions)

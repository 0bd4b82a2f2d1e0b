"""OpenEnv 0.10 as the tests use it: in its own environment (scripts/openenv_env.py makes it; see
there why it cannot share this one), reached through tests/serve/openenv_side.py.

* :class:`Clients`: OpenEnv's clients (``GenericEnvClient``, ``MCPToolClient``), called as if
  they were here; their errors come back as :class:`OpenEnvError`.
* :func:`validate`: the ``openenv validate`` command (also :meth:`Clients.validate`, without
  starting a process).
* :func:`countdown_server`: an environment served by OpenEnv's own server code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO
from tests.serve.servers import read_line, stop

SIDE = Path(__file__).with_name("openenv_side.py")
REPLY_TIMEOUT_S = 300


def openenv_python() -> Path:
    """The interpreter of OpenEnv's environment; the test is skipped when it is not made."""
    found = subprocess.run([sys.executable, str(REPO / "scripts" / "openenv_env.py"), "--find"],
                           capture_output=True, text=True, timeout=60)
    if found.returncode != 0:
        pytest.skip("OpenEnv's environment is not made: run `python scripts/openenv_env.py` "
                    "(scripts/install_test_deps.sh does)")
    return Path(found.stdout.strip())


class OpenEnvError(Exception):
    """An OpenEnv client raised; the message is its ``Type: message``."""


class Clients:
    """A process of OpenEnv's environment holding OpenEnv's clients."""

    def __init__(self):
        self.process = subprocess.Popen([str(openenv_python()), str(SIDE), "clients"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, cwd=REPO)

    def request(self, **request: Any) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = json.loads(_answer(self.process))
        if "error" in answer:
            raise OpenEnvError(answer["error"])
        return answer["result"]

    @contextmanager
    def open(self, kind: str, base_url: str) -> Iterator[Client]:
        """A sync ``GenericEnvClient`` (``kind="generic"``) or ``MCPToolClient`` (``"mcp"``), connected."""
        client = Client(self, self.request(op="open", kind=kind, base_url=base_url))
        try:
            yield client
        finally:
            self.request(op="close", handle=client.handle)

    def validate(self, *arguments: str) -> subprocess.CompletedProcess:
        """``openenv validate ARGUMENTS`` through the command's entry point in this process (which
        has OpenEnv imported already); its exit code and output."""
        run = self.request(op="validate", arguments=list(arguments))
        return subprocess.CompletedProcess(["openenv", "validate", *arguments], run["returncode"], run["stdout"],
                                           run["stderr"])

    def play_together(self, base_url: str, episodes: list[dict[str, Any]]) -> list[list[Any]]:
        """Every episode at once, each on an async ``GenericEnvClient`` of its own."""
        return self.request(op="play_together", base_url=base_url, episodes=episodes)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


class Client:
    """One of OpenEnv's sync clients: its methods take and return JSON values (a step result is
    ``{"observation": {...}, "reward": ..., "done": ...}``)."""

    def __init__(self, clients: Clients, handle: int):
        self.clients, self.handle = clients, handle

    def __getattr__(self, method: str):
        def call(*args: Any, **kwargs: Any) -> Any:
            return self.clients.request(op="call", handle=self.handle, method=method, args=list(args), kwargs=kwargs)

        return call


def validate(*arguments: str) -> subprocess.CompletedProcess:
    """``openenv validate ARGUMENTS``, the command as a process of its own (its exit code and output)."""
    command = [str(openenv_python().parent / "openenv"), "validate", *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=REPLY_TIMEOUT_S, cwd=REPO)


@contextmanager
def countdown_server() -> Iterator[str]:
    """tests/serve/openenv_side.py's countdown environment on OpenEnv's server; yields its URL."""
    process = subprocess.Popen([str(openenv_python()), str(SIDE), "countdown-server"], stdout=subprocess.PIPE,
                               text=True, cwd=REPO)
    try:
        yield _answer(process).strip()
    finally:
        stop(process)


def _answer(process: subprocess.Popen) -> str:
    line = read_line(process, REPLY_TIMEOUT_S)
    if not line:
        raise AssertionError(f"OpenEnv's side did not answer within {REPLY_TIMEOUT_S} s (exit code {process.poll()})")
    return line

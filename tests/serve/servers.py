"""Servers for the serve tests, all on 127.0.0.1 with a free port: ``gem serve`` as a process (the
command users run), and a GEM application in a thread of the test process. (OpenEnv's own server
runs in OpenEnv's environment: tests/serve/openenv_peer.py.)"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import free_port, wait_healthy

uvicorn = pytest.importorskip("uvicorn", reason="the openenv extra is installed by scripts/install_test_deps.sh")

START_TIMEOUT_S = 60


@contextmanager
def gem_serve(env_id: str, *options: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """``gem serve ENV_ID OPTIONS --port 0`` as a process; yields its URL and the process."""
    command = [sys.executable, "-m", "gem_core.cli", "serve", env_id, "--port", "0", *options]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = read_line(process, START_TIMEOUT_S)
        match = re.search(r"http://\S+", line)
        if not match:
            raise AssertionError(f"gem serve did not start: {line!r} {process.stderr.read()[-2000:]!r}")
        yield match.group(0), process
    finally:
        stop(process)


def read_line(process: subprocess.Popen, timeout: float) -> str:
    """The next line of ``process``'s output ("" if none comes within ``timeout`` seconds)."""
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return line[0] if line else ""


def stop(process: subprocess.Popen) -> None:
    """Terminate ``process``, killing it if it does not exit within 10 seconds."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


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


@contextmanager
def package_server(package: Path) -> Iterator[str]:
    """An exported package's server entry (``python -m server.app``, as its image runs it) on a
    free port; yields its URL once it answers."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "server.app", "--host", "127.0.0.1", "--port", str(port)],
                               cwd=package, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process)
        yield url
    finally:
        stop(process)

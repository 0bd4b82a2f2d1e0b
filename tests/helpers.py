"""Helpers shared by the tests."""

import asyncio
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def doc_pages() -> list[Path]:
    """README.md and every page of the documentation site (docs/**/*.md)."""
    from tests.docs.examples import doc_pages

    return doc_pages()


def python_blocks(*pages: str) -> list[str]:
    """The ```python blocks of ``pages`` (paths relative to the repository, e.g.
    ``"docs/tools.md"``), in order; of every page of :func:`doc_pages` when none are named."""
    from tests.docs.examples import python_sources

    return python_sources(*pages)


def run_python(code: str, *, env: dict | None = None, path: list[Path] = (), timeout: float = 120,
               argv: list[str] = ()) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (plugins load once per process), with ``sys.argv[1:]``
    set to ``argv``."""
    full_env = {**os.environ, **(env or {})}
    if path:
        full_env["PYTHONPATH"] = os.pathsep.join([*map(str, path), full_env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *argv],
        capture_output=True, text=True, env=full_env, timeout=timeout,
    )


def make_without(module: str, env_id: str) -> subprocess.CompletedProcess:
    """Make ``env_id`` in a fresh interpreter where ``module`` cannot be imported (as if it were not
    installed); stdout holds the ``MissingDependencyError`` message, if one was raised."""
    return run_python(f"""
        import sys
        sys.modules[{module!r}] = None
        import gem_core
        try:
            gem_core.make({env_id!r})
        except gem_core.MissingDependencyError as e:
            print(e)
    """)


def gem_command(*args: str, env: dict | None = None, input: str | None = None, path: list[Path] = ()) -> subprocess.CompletedProcess:
    """Run the ``gem`` command in a fresh process."""
    full_env = {**os.environ, **(env or {})}
    if path:
        full_env["PYTHONPATH"] = os.pathsep.join([*map(str, path), full_env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "gem_core.cli", *args],
        capture_output=True, text=True, env=full_env, input=input, timeout=120,
    )


def fake_distribution(root: Path, name: str, plugins: dict[str, str], modules: dict[str, str]) -> Path:
    """Write an installed-looking distribution (dist-info with ``gem`` entry points) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    info = root / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "".join(f"{ep} = {target}\n" for ep, target in plugins.items())
    (info / "entry_points.txt").write_text(f"[gem]\n{lines}")
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))
    return root


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def search_server(*args: str) -> Iterator[tuple[subprocess.Popen, str]]:
    """Run ``gem search-server ARGS`` on a free port; yield the process and its base URL once it
    answers, and kill it afterwards."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "gem_core.cli", "search-server", "--port", str(port), *args],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, process)
        yield process, base
    finally:
        process.kill()
        process.wait()


def wait_healthy(url: str, process: subprocess.Popen | None = None, timeout: float = 60) -> None:
    """Wait until ``url``/health answers 200 (or ``process`` exits, or ``timeout`` seconds pass)."""
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the server exited: {process.stdout.read() if process.stdout else ''}")
        assert time.monotonic() < deadline, f"{url} did not answer within {timeout:g} s"
        time.sleep(0.1)


def kill_ray_host(pool_name: str, index: int) -> None:
    """End host ``index`` of the named Ray pool ``pool_name`` and wait until it is gone."""
    import ray

    from gem_core.vector.ray_pool import NAMESPACE, RayPool

    kill_ray_actor(ray.get_actor(RayPool(name=pool_name).host_name(index), namespace=NAMESPACE))


def kill_ray_actor(handle) -> None:
    """End the environment host ``handle`` and wait until it is gone."""
    import ray

    ray.kill(handle, no_restart=True)
    for _ in range(100):
        try:
            ray.get(handle.describe.remote(), timeout=5)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError("the host did not end")


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: object) -> None:
    """Answer the request ``handler`` serves with ``payload`` as JSON (the tests' stub servers)."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def assert_single_answer_misuse_is_clear(env, action: str) -> None:
    """``step`` before ``reset``, and a second answer to a one-answer question, are GemErrors that
    say to reset (``env`` is fresh; it is left reset and answered)."""
    import pytest

    from gem_core.errors import GemError

    with pytest.raises(GemError, match="reset"):
        env.step(action)
    env.reset(seed=0)
    env.step(action)
    with pytest.raises(GemError, match="reset"):
        env.step(action)


def offline_data_error(env_id: str, hf_home: Path) -> str:
    """The DataNotFoundError message of making ``env_id`` in a fresh process with an empty Hugging
    Face cache (``hf_home``) and the hub offline."""
    done = run_python(f"""
        import gem_core
        try:
            gem_core.make({env_id!r})
        except gem_core.DataNotFoundError as e:
            print("DataNotFoundError:", e)
    """, env={"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(hf_home)})
    assert done.returncode == 0 and "DataNotFoundError:" in done.stdout, done.stdout + done.stderr
    return done.stdout.split("DataNotFoundError:", 1)[1].strip()


class LoopTicks:
    """``async with LoopTicks(interval) as ticks``: ``ticks.count`` is how often a task sleeping
    ``interval`` seconds woke meanwhile; a call that blocks the event loop stops the count."""

    def __init__(self, interval: float):
        self.interval, self.count = interval, 0

    async def __aenter__(self) -> "LoopTicks":
        self._task = asyncio.ensure_future(self._tick())
        return self

    async def __aexit__(self, *exc_info) -> None:
        self._task.cancel()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.count += 1

"""Workload: gem serve (over OpenEnv and ORS) against OpenEnv's own server, serving GuessTheNumber to 1 and 32 sessions.

Both servers run as processes on 127.0.0.1 and serve the same game logic (``game:GuessTheNumber-v0``):
``gem serve``, and OpenEnv 0.10's ``create_fastapi_app`` around an OpenEnv ``Environment`` that
plays the same GEM game, run from OpenEnv's own virtual environment (scripts/openenv_env.py makes
it on first use, which needs the package index; OpenEnv 0.10 cannot share this project's
environment). The client drives N WebSocket sessions at once (N = 1, 32) from one process, or
from two sharing the sessions when N is even and the machine has two cores (so that the client
is not what bounds the server), each playing episode after episode with pre-drawn guesses, and
sends both servers the same messages;
the two servers are measured in alternating rounds, so a shared machine's load weighs on both
alike. ``gem serve`` also serves the game over ORS (``--ors``, when ors-sdk is installed), driven
with ors-sdk's own async client (``gem_serve_ors``): an episode is a session on a task, a step a
call of the ``step`` tool (a POST answered with server-sent events). Metrics per server and N:
steps per second (all sessions together; ORS's include opening a session per episode), the p50/p99
latency of a step (send to reply) and the server process's CPU time per step (all its threads;
unlike the others, hardly moved by the client's share of the machine), plus the steps-per-second
ratio gem serve / OpenEnv.

Run as ``python bench/workloads/serve.py --impl ours [--quick]``. gem-llm has no server, so
``--impl reference`` exits 3. The last stdout line is the metrics JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from _protocol import Metrics, no_counterpart, parser as workload_parser, percentile

GAME = "game:GuessTheNumber-v0"
SESSIONS = (1, 32)
CLIENT_PROCESSES = min(2, os.cpu_count() or 1)  # so that the client, not only the server, can use the cores
REPO = Path(__file__).resolve().parents[2]


# ---- the same game behind OpenEnv's server classes -----------------------------------------

def openenv_app():
    """OpenEnv's FastAPI application serving GEM's GuessTheNumber through OpenEnv's classes."""
    import gem_core
    from openenv.core.env_server import create_fastapi_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State

    class GameAction(Action):
        message: str

    class GameObservation(Observation):
        prompt: str

    class GameEnvironment(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self):
            super().__init__()
            self.game = gem_core.make(GAME)
            self._state = State(episode_id=None, step_count=0)

        def reset(self, seed=None, episode_id=None, **kwargs):
            observation, _ = self.game.reset(seed=seed)
            self._state = State(episode_id=episode_id, step_count=0)
            return GameObservation(prompt=observation, done=False, reward=None)

        def step(self, action, timeout_s=None, **kwargs):
            observation, reward, terminated, truncated, _ = self.game.step(action.message)
            self._state.step_count += 1
            return GameObservation(prompt=observation, done=terminated or truncated, reward=reward)

        @property
        def state(self):
            return self._state

        def close(self):
            self.game.close()

    return create_fastapi_app(GameEnvironment, GameAction, GameObservation, max_concurrent_envs=max(SESSIONS))


def run_openenv_server() -> None:
    """Serve :func:`openenv_app` on a free port; print its URL (the job of a child process run by
    OpenEnv's environment)."""
    import uvicorn

    app = openenv_app()  # imports first, so that the server answers as soon as it says where it is
    sock = socket.create_server(("127.0.0.1", 0))
    print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


def cpu_seconds(pid: int) -> float:
    """CPU time a process has used so far (all its threads, user and system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start(command: list[str], quiet: bool = False) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL if quiet else None,
                               text=True, cwd=REPO)
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(120)
    match = re.search(r"http://\S+", line[0] if line else "")
    if not match:
        process.kill()
        raise SystemExit(f"{command} did not start")
    return process, match.group(0)


# ---- the client ---------------------------------------------------------------------------

def drive(url: str, sessions: int, duration: float, seed: int, pool: ProcessPoolExecutor,
          protocol: str = "openenv") -> tuple[int, list[float]]:
    """Drive ``sessions`` sessions of ``protocol`` (``openenv`` or ``ors``) for ``duration``
    seconds from the client processes of ``pool`` (as many as share the sessions evenly); (steps,
    step latencies + the longest wall time)."""
    processes = max(n for n in range(1, CLIENT_PROCESSES + 1) if sessions % n == 0)
    share = sessions // processes
    player = _play_ors if protocol == "ors" else _play
    runs = [pool.submit(player, url, share, duration, seed, share * i) for i in range(processes)]
    count, latencies, wall = 0, [], 0.0
    for run in runs:
        steps, times = run.result()
        count, wall = count + steps, max(wall, times.pop())
        latencies.extend(times)
    return count, latencies + [wall]


def _play(url: str, sessions: int, duration: float, seed: int, first: int) -> tuple[int, list[float]]:
    return asyncio.run(play(url, sessions, duration, seed, first))


async def play(url: str, sessions: int, duration: float, seed: int, first: int = 0) -> tuple[int, list[float]]:
    """Drive sessions ``first`` to ``first + sessions - 1`` for ``duration`` seconds, in this
    process; (steps, step latencies + the wall time)."""
    from websockets.asyncio.client import connect

    latencies: list[float] = []
    deadline = time.perf_counter() + duration

    async def session(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        async with connect(url.replace("http://", "ws://") + "/ws", compression=None, max_size=None) as ws:
            episode = 0
            while time.perf_counter() < deadline:
                await ws.send(json.dumps({"type": "reset", "data": {"seed": seed * 1000 + index * 100 + episode}}))
                json.loads(await ws.recv())
                episode += 1
                done = False
                while not done and time.perf_counter() < deadline:
                    message = json.dumps({"type": "step", "data": {"message": f"\\boxed{{{rng.randint(1, 20)}}}"}})
                    start = time.perf_counter()
                    await ws.send(message)
                    reply = json.loads(await ws.recv())
                    latencies.append(time.perf_counter() - start)
                    assert reply["type"] == "observation", reply
                    done = reply["data"]["done"]

    started = time.perf_counter()
    await asyncio.gather(*(session(i) for i in range(first, first + sessions)))
    return len(latencies), latencies + [time.perf_counter() - started]  # the wall time rides along


def _play_ors(url: str, sessions: int, duration: float, seed: int, first: int) -> tuple[int, list[float]]:
    return asyncio.run(play_ors(url, sessions, duration, seed, first))


async def play_ors(url: str, sessions: int, duration: float, seed: int, first: int = 0) -> tuple[int, list[float]]:
    """:func:`play` over ORS, with ors-sdk's own async client: each episode a session on a task
    (opening it is not a step, but its time counts in the wall time); each step a call of the
    ``step`` tool."""
    from ors.client import AsyncORS

    latencies: list[float] = []
    deadline = time.perf_counter() + duration
    client = AsyncORS(base_url=url)  # kept: its connections close when it is collected
    environment = client.environment(GAME)
    tasks = await environment.list_tasks("train")  # once, as a trainer would

    async def session(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        episode = 0
        while time.perf_counter() < deadline:
            task = tasks[(seed * 1000 + index * 100 + episode) % len(tasks)]
            episode += 1
            async with environment.session(task=task) as ors_session:
                await ors_session.get_prompt()
                done = False
                while not done and time.perf_counter() < deadline:
                    start = time.perf_counter()
                    output = await ors_session.call_tool("step", {"action": f"\\boxed{{{rng.randint(1, 20)}}}"})
                    latencies.append(time.perf_counter() - start)
                    done = output.finished

    started = time.perf_counter()
    try:
        await asyncio.gather(*(session(i) for i in range(first, first + sessions)))
    finally:
        await environment.client.close()
    return len(latencies), latencies + [time.perf_counter() - started]


def main() -> None:
    parser = workload_parser(__doc__, "shorter rounds (about 20 s in all)")
    parser.add_argument("--openenv-server", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.openenv_server:
        return run_openenv_server()
    if args.impl == "reference":
        no_counterpart("gem-llm has no environment server; this workload compares gem serve with OpenEnv's server")
    made = subprocess.run([sys.executable, str(REPO / "scripts" / "openenv_env.py")], capture_output=True, text=True)
    if made.returncode != 0:
        raise SystemExit(f"OpenEnv's environment could not be made: {made.stderr[-2000:]}")
    openenv_python = made.stdout.strip()
    ors = importlib.util.find_spec("ors") is not None  # gem serve over ORS too, with ors-sdk's client
    if not ors:
        print("ors-sdk is not installed (the ors extra): no ORS figures", file=sys.stderr, flush=True)

    rounds, duration = (2, 2.0) if args.quick else (4, 4.0)
    steps: dict[tuple[str, int], int] = {}
    walls: dict[tuple[str, int], float] = {}
    cpu: dict[tuple[str, int], float] = {}
    latencies: dict[tuple[str, int], list[float]] = {}
    servers: dict[str, tuple[subprocess.Popen, str]] = {}
    pool = ProcessPoolExecutor(CLIENT_PROCESSES)
    try:
        servers["gem_serve"] = start([sys.executable, "-m", "gem_core.cli", "serve", GAME, "--port", "0",
                                      "--max-sessions", str(max(SESSIONS)), *(["--ors"] if ors else [])])
        # quiet: OpenEnv's server logs a traceback for every session a client closes
        servers["openenv_server"] = start([openenv_python, __file__, "--openenv-server"], quiet=True)
        # what is measured: (name, server, protocol); gem serve's ORS is on the same server, another protocol
        measured = [("gem_serve", "gem_serve", "openenv"), ("openenv_server", "openenv_server", "openenv")]
        if ors:
            measured.append(("gem_serve_ors", "gem_serve", "ors"))
        for name, server, protocol in measured:  # warm up: first connections, imports on first use, the pool
            drive(servers[server][1], 2 * CLIENT_PROCESSES, 0.5, 0, pool, protocol)
        for round_ in range(rounds):
            order = measured if round_ % 2 == 0 else measured[::-1]
            for sessions in SESSIONS:
                for name, server, protocol in order:
                    process, url = servers[server]
                    before = cpu_seconds(process.pid)
                    count, times = drive(url, sessions, duration, round_ + 1, pool, protocol)
                    key = (name, sessions)
                    cpu[key] = cpu.get(key, 0.0) + cpu_seconds(process.pid) - before
                    steps[key] = steps.get(key, 0) + count
                    walls[key] = walls.get(key, 0.0) + times.pop()
                    latencies.setdefault(key, []).extend(times)
                    print(f"round {round_ + 1}: {name} x{sessions}: {count / duration:.0f} steps/s",
                          file=sys.stderr, flush=True)
    finally:
        pool.shutdown(cancel_futures=True)
        for process, _ in servers.values():
            process.terminate()
            process.wait(timeout=10)
    metrics = Metrics()
    for (name, sessions), count in steps.items():
        times = latencies[(name, sessions)]
        metrics.add(f"{name}_steps_per_s_{sessions}", count / walls[(name, sessions)], "steps/s")
        metrics.add(f"{name}_step_p50_ms_{sessions}", percentile(times, 0.5) * 1000, "ms", "lower")
        metrics.add(f"{name}_step_p99_ms_{sessions}", percentile(times, 0.99) * 1000, "ms", "lower")
        metrics.add(f"{name}_cpu_us_per_step_{sessions}", cpu[(name, sessions)] / count * 1e6, "us", "lower")
    for sessions in SESSIONS:
        ratio = metrics[f"gem_serve_steps_per_s_{sessions}"]["value"] / metrics[f"openenv_server_steps_per_s_{sessions}"]["value"]
        metrics.add(f"speedup_vs_openenv_{sessions}", ratio, "x")
        if ors:
            ratio = (metrics[f"gem_serve_ors_steps_per_s_{sessions}"]["value"] /
                     metrics[f"openenv_server_steps_per_s_{sessions}"]["value"])
            metrics.add(f"ors_vs_openenv_server_{sessions}", ratio, "x")
    metrics.emit()

if __name__ == "__main__":
    main()

"""Workload: vector-environment throughput, sync and async, side by side with gem-llm.

Cells (16 environments each, same-step autoreset, which is gem-llm's default):

* GuessTheNumber-hard and Minesweeper-hard, sync and async: environment steps per second with
  pre-drawn random actions (the two modes stepped in alternating chunks, so that a shared
  machine's load weighs on both alike), and async / sync (cheap CPU-bound envs should not lose
  in async mode);
* an environment whose step blocks for 2 ms (a tool or server call), async: steps per second and
  the concurrency reached (2 ms x steps / wall time; ideal 16).

Run as ``python bench/workloads/vector.py --impl ours|reference [--quick]`` with the interpreter
of the implementation under test; the last stdout line is the metrics JSON. A cell whose
environment is not registered in the implementation is left out (and said so on stderr).
"""

from __future__ import annotations

import contextlib
import io
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from _protocol import Metrics, parser as workload_parser

NUM_ENVS = 16
LATENCY_S = 0.002
EPISODE_LENGTH = 10  # steps of the blocking environment per episode


def guess_actions(rng: random.Random) -> str:
    return f"\\boxed{{{rng.randint(1, 50)}}}"


def minesweeper_actions(rng: random.Random) -> str:
    kind = "flag" if rng.random() < 0.1 else "reveal"
    return f"\\boxed{{{kind} {rng.randint(0, 7)} {rng.randint(0, 7)}}}"


CPU_CELLS = {
    "gtn_hard": ("game:GuessTheNumber-v0-hard", guess_actions),
    "minesweeper_hard": ("game:Minesweeper-v0-hard", minesweeper_actions),
}


def blocking_env(base: type) -> type:
    """An environment class on ``base`` (either implementation's ``Env``) whose step blocks for
    ``LATENCY_S`` (a tool or server call), with episodes of ``EPISODE_LENGTH`` steps."""

    class Blocking(base):  # type: ignore[valid-type,misc]
        def reset(self, seed=None, **options):
            self.t = 0
            return "start", {}

        def step(self, action):
            time.sleep(LATENCY_S)
            self.t += 1
            return "observation", 0.0, self.t >= EPISODE_LENGTH, False, {}

    return Blocking


class Ours:
    def __init__(self) -> None:
        import gem_core

        self.gem = gem_core

    def has(self, env_id: str) -> bool:
        return any(spec.id == env_id for spec in self.gem.list_envs(env_id))

    def vec(self, env_id: str, mode: str) -> Any:
        return self.gem.make_vec(env_id, NUM_ENVS, mode=mode, autoreset="same_step")

    def blocking_vec(self, declared: bool = True) -> Any:
        Blocking = blocking_env(self.gem.Env)
        if declared:
            Blocking.blocking = True  # else the vector environment finds out from the first calls
        return self.gem.make_vec([Blocking] * NUM_ENVS, mode="async", autoreset="same_step")


class Reference:
    def __init__(self) -> None:
        import gem

        self.gem = gem

    def has(self, env_id: str) -> bool:
        from gem.envs.registration import ENV_REGISTRY

        return env_id in ENV_REGISTRY

    def vec(self, env_id: str, mode: str) -> Any:
        with contextlib.redirect_stdout(io.StringIO()):  # it prints what it builds
            return self.gem.make_vec([env_id] * NUM_ENVS, async_mode=mode == "async")

    def blocking_vec(self, declared: bool = True) -> Any:  # gem-llm has no such declaration
        from gem.core import Env
        from gem.vector.async_vector_env import AsyncVectorEnv

        return AsyncVectorEnv(env_ids=["blocking"] * NUM_ENVS, env_fns=[blocking_env(Env)] * NUM_ENVS)


def steps_per_second(vec: Any, batches: list[list[str]]) -> float:
    vec.reset(seed=0)
    for batch in batches[:20]:  # warm-up
        vec.step(batch)
    start = time.perf_counter()
    for batch in batches:
        vec.step(batch)
    return NUM_ENVS * len(batches) / (time.perf_counter() - start)


def interleaved_rates(vecs: dict[str, Any], batches: list[list[str]], chunk: int = 25) -> dict[str, float]:
    """Steps per second of each vector env, stepping them in alternating chunks of ``chunk``
    batches, so that the load of a shared machine weighs on both alike."""
    elapsed = dict.fromkeys(vecs, 0.0)
    for vec in vecs.values():
        vec.reset(seed=0)
        for batch in batches[:20]:  # warm-up
            vec.step(batch)
    for k, start in enumerate(range(0, len(batches), chunk)):
        names = list(vecs) if k % 2 == 0 else list(reversed(vecs))
        for name in names:
            began = time.perf_counter()
            for batch in batches[start:start + chunk]:
                vecs[name].step(batch)
            elapsed[name] += time.perf_counter() - began
    return {name: NUM_ENVS * len(batches) / seconds for name, seconds in elapsed.items()}


def median_of(repeats: int, measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(repeats))


def main() -> None:
    parser = workload_parser(__doc__, "fewer steps and repeats (noisier)")
    args = parser.parse_args()
    impl = Ours() if args.impl == "ours" else Reference()
    cpu_steps, blocking_steps, repeats = (400, 60, 3) if args.quick else (2000, 250, 5)
    rng = random.Random(0)
    metrics = Metrics()

    cells = [(name, env_id, draw) for name, (env_id, draw) in CPU_CELLS.items()]
    from rich.progress import Progress

    with Progress(console=_stderr_console(), transient=True) as progress:
        task = progress.add_task("vector cells", total=len(cells) * 2 + 1)
        for name, env_id, draw in cells:
            if not impl.has(env_id):
                print(f"{env_id} is not registered in {args.impl}; cell {name} left out", file=sys.stderr)
                progress.advance(task, 2)
                continue
            batches = [[draw(rng) for _ in range(NUM_ENVS)] for _ in range(cpu_steps)]
            vecs = {mode: impl.vec(env_id, mode) for mode in ("sync", "async")}
            samples: dict[str, list[float]] = {"sync": [], "async": []}
            for _ in range(repeats):
                for mode, rate in interleaved_rates(vecs, batches).items():
                    samples[mode].append(rate)
            rates = {mode: statistics.median(values) for mode, values in samples.items()}
            for mode in ("sync", "async"):
                metrics.add(f"{name}_{mode}_steps_per_s", rates[mode], "steps/s")
            metrics.add(f"{name}_async_vs_sync", rates["async"] / rates["sync"], "x")
            progress.advance(task, 2)
        batches = [["a"] * NUM_ENVS for _ in range(blocking_steps)]
        for declared, name in ((True, "blocking_2ms"), (False, "undeclared_2ms")):
            vec = impl.blocking_vec(declared)
            rate = median_of(repeats, lambda: steps_per_second(vec, batches))
            metrics.add(f"{name}_async_steps_per_s", rate, "steps/s")
            metrics.add(f"{name}_async_concurrency", rate * LATENCY_S, "x")
        progress.advance(task)
    metrics.emit()


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


if __name__ == "__main__":
    main()

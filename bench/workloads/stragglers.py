"""Workload: collecting episodes when some environments hang, side by side with gem-llm.

One environment for both implementations (built on each one's ``Env``): episodes of
:data:`EPISODE_TURNS` turns whose step waits :data:`LATENCY_S` (a tool or server call), played on
:data:`SLOTS` slots in each implementation's async vector environment with an instant scripted
policy, until :data:`EPISODES` episodes have ended. In the cells with hangs, 1% of the episodes
(:data:`HUNG`, by slot and episode number, the same on both sides) hang at their third turn and
never return (a closed environment lets its call go).

Metrics (seconds to the last of the 256 episodes, or the :data:`BOUND` a cell hit):

* ``healthy_s``: no hang (ours with the deadline set: what the deadline costs), after an
  untimed warm-up run;
* ``hung_deadline_s``: with the hangs; ours with ``episode_deadline`` (the hung episodes end
  failed at it, the others go on); gem-llm has no deadline, so its collection waits on the first
  hang until the bound;
* ``hung_no_deadline_s``: with the hangs and no episode deadline, on both sides: each stops at
  the bound (ours through its collection deadline, gem-llm from the outside);
* ``hit_bound``: how many of the two hung cells hit the bound.

Run as ``python bench/workloads/stragglers.py --impl ours|reference [--quick]``; the last stdout
line is the metrics JSON.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from _protocol import Metrics, parser as workload_parser

EPISODES = 256
SLOTS = 32
EPISODE_TURNS = 5
LATENCY_S = 0.002
EPISODE_DEADLINE_S = 2.0
BOUND = 30.0
QUICK_BOUND = 8.0
#: (slot, its episode number) of the episodes that hang: 3 of 256, about 1%.
HUNG = {(5, 1), (17, 3), (28, 6)}
HANG_TURN = 3


def straggling_env(base: type, hung: set[tuple[int, int]]) -> type:
    """An environment class on ``base`` (either implementation's ``Env``); instances number
    themselves in the order they are made (the slot order, on both sides)."""

    class Straggling(base):  # type: ignore[valid-type,misc]
        made = 0

        def __init__(self) -> None:
            self.slot, Straggling.made = Straggling.made, Straggling.made + 1
            self.episode, self.t = -1, 0
            self.released = threading.Event()

        def reset(self, seed=None, **options):
            self.episode, self.t = self.episode + 1, 0
            return "start", {}

        def step(self, action):
            self.t += 1
            if (self.slot, self.episode) in hung and self.t == HANG_TURN:
                self.released.wait()  # forever, unless the environment is closed
                raise RuntimeError("closed while hung")
            time.sleep(LATENCY_S)
            return "observation", 1.0, self.t >= EPISODE_TURNS, False, {}

        def sample_random_action(self) -> str:
            return "a"

        def close(self) -> None:
            self.released.set()

    return Straggling


class Ours:
    def __init__(self) -> None:
        import gem_core

        self.gem = gem_core

    def collect(self, hung: set[tuple[int, int]], episode_deadline: float | None, bound: float) -> tuple[float, bool]:
        """Seconds to collect, and whether the collection hit ``bound``."""
        Env = straggling_env(self.gem.Env, hung)
        Env.blocking = True
        with self.gem.make_vec([Env] * SLOTS, mode="async") as vec:
            started = time.perf_counter()
            episodes = self.gem.collect_episodes(vec, lambda obs: ["a"] * len(obs), EPISODES,
                                                 episode_deadline=episode_deadline, deadline=bound)
            took = time.perf_counter() - started
        cut = sum(e.failure is not None and "collection's deadline" in e.failure.error for e in episodes)
        return took, cut > 0 or len(episodes) < EPISODES


class Reference:
    """gem-llm's AsyncVectorEnv, stepped until enough episodes ended; it has no deadline, so a
    hung environment holds its step (and the collection) until this bound stops it from outside."""

    def __init__(self) -> None:
        import gem

        self.gem = gem

    def collect(self, hung: set[tuple[int, int]], episode_deadline: float | None, bound: float) -> tuple[float, bool]:
        from gem.core import Env
        from gem.vector.async_vector_env import AsyncVectorEnv

        cls = straggling_env(Env, hung)
        vec = AsyncVectorEnv(env_ids=["straggling"] * SLOTS, env_fns=[cls] * SLOTS)
        done = threading.Event()

        def play() -> None:
            vec.reset()
            ended = 0
            while ended < EPISODES:
                _, _, terminated, truncated, _ = vec.step(["a"] * SLOTS)
                ended += int((terminated | truncated).sum())
            done.set()

        started = time.perf_counter()
        threading.Thread(target=play, daemon=True).start()
        finished = done.wait(bound)
        return (time.perf_counter() - started if finished else bound), not finished


def main() -> None:
    args = workload_parser(__doc__, f"a {QUICK_BOUND:g} s bound instead of {BOUND:g} s").parse_args()
    impl = Ours() if args.impl == "ours" else Reference()
    bound = QUICK_BOUND if args.quick else BOUND
    metrics = Metrics()
    impl.collect(set(), EPISODE_DEADLINE_S, bound)  # warm-up: threads, imports
    healthy, _ = impl.collect(set(), EPISODE_DEADLINE_S, bound)
    with_deadline, hit_with = impl.collect(HUNG, EPISODE_DEADLINE_S, bound)
    without, hit_without = impl.collect(HUNG, None, bound)
    print(f"{args.impl}: healthy {healthy:.2f} s, hung with the deadline {with_deadline:.2f} s "
          f"({'hit' if hit_with else 'within'} the {bound:g} s bound), without it {without:.2f} s "
          f"({'hit' if hit_without else 'within'} the bound)", file=sys.stderr)
    metrics.add("healthy_s", healthy, "s", "lower")
    metrics.add("hung_deadline_s", with_deadline, "s", "lower")
    metrics.add("hung_no_deadline_s", without, "s", "lower")
    metrics.add("hit_bound", float(hit_with) + float(hit_without), "cells", "lower")
    metrics.emit()
    sys.stdout.flush()
    os._exit(0)  # the reference's hung worker threads would hold the interpreter's exit


if __name__ == "__main__":
    main()

"""At scale: 10,000 episodes of a cheap environment through ``collect_episodes``, in the async
mode and on a local Ray cluster, with failures injected at random turns (5% of the episodes raise,
1% hang forever, 1% return garbage).

Every episode ends exactly once; the collection ends well within its deadline although the hangs,
one after another, would take many times longer; no process or thread the hangs started is left;
and ReBN's statistics over the whole batch, told which episodes are valid, equal those over the
valid episodes alone.
"""

from __future__ import annotations

import random
import subprocess
import threading
import time
import uuid

import numpy as np
import pytest

import gem_core
from gem_core import Env
from gem_core.estimators import estimate

EPISODES = 10_000
SLOTS = 64
EPISODE_DEADLINE = 5.0
DEADLINE = 85.0
UNRELIABLE = "vector-test:Unreliable-v0"
#: The share of episodes of each injected failure, and the kind each ends with.
INJECTED = {"raise": (0.05, "error"), "hang": (0.01, "deadline"), "garbage": (0.01, "malformed")}


class Unreliable(Env):
    """Episodes of 1 to 6 turns, all drawn from the seed, rewarded per turn by the action; an
    episode may misbehave at one turn drawn from its seed (:data:`INJECTED`). A hang waits on a
    child process that never ends (``sleep`` with a marker in its arguments), which ``close``
    kills, as a sandbox's call ends when its sandbox is killed."""

    def __init__(self, marker: str = "3600"):
        self.marker = marker
        self.process: subprocess.Popen | None = None
        self.plan: tuple[int, str | None, int] = (1, None, 0)
        self.t = 0

    def reset(self, seed=None, **options):
        super().reset(seed)
        self.plan, self.t = planned(seed), 0
        return f"episode {seed}", {}

    def step(self, action):
        self.t += 1
        length, fault, turn = self.plan
        if fault is not None and self.t == turn:
            if fault == "raise":
                raise RuntimeError(f"injected failure at turn {turn}")
            if fault == "garbage":
                return "garbage", float("nan"), False, False, {}
            self.process = subprocess.Popen(["sleep", self.marker])
            self.process.wait()
            raise RuntimeError("the environment was closed under its call")
        return f"turn {self.t}", float(len(action) % 3), self.t >= length, False, {}

    def close(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()


def planned(seed: int) -> tuple[int, str | None, int]:
    """``(length, injected failure or None, its turn)`` of the episode of ``seed``."""
    rng = random.Random(f"unreliable {seed}")
    length, draw = rng.randint(1, 6), rng.random()
    fault, cumulative = None, 0.0
    for name, (share, _) in INJECTED.items():
        cumulative += share
        if fault is None and draw < cumulative:
            fault = name
    return length, fault, rng.randint(1, length)


def policy(observations):
    return [f"{o[-1]}{'x' * (len(o) % 4)}" for o in observations]


def leftover_processes(marker: str) -> list[int]:
    import psutil

    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if process.info["cmdline"] == ["sleep", marker]:
                found.append(process.pid)
        except psutil.Error:
            continue
    return found


@pytest.fixture(scope="module")
def registered():
    from gem_core.errors import DuplicateRegistrationError
    from gem_core.registry import register

    try:
        register(UNRELIABLE, f"{__name__}:Unreliable")
    except DuplicateRegistrationError:
        pass


@pytest.mark.parametrize("mode", ["async", "ray"])
def test_ten_thousand_episodes_with_failures_end_once_each_on_time(mode, registered, request):
    pool = None
    if mode == "ray":
        request.getfixturevalue("ray_cluster")
        pool = {"hosts": 2, "start_timeout": 120, "call_timeout": 120}
    marker = f"{3600 + random.random():.9f}"  # this run's hangs, told apart from any other process
    threads_before = threading.active_count()
    ended: list[int] = []
    with gem_core.make_vec(UNRELIABLE, SLOTS, mode=mode, pool=pool, marker=marker) as vec:
        started = time.monotonic()
        episodes = gem_core.collect_episodes(vec, policy, EPISODES, seed=list(range(EPISODES)),
                                             episode_deadline=EPISODE_DEADLINE, deadline=DEADLINE,
                                             on_episode=lambda e: ended.append(id(e)))
        took = time.monotonic() - started
    print(f"{mode}: {EPISODES} episodes in {took:.1f} s")

    # every episode ends exactly once, as its plan says
    assert len(ended) == len(set(ended)) == EPISODES and sorted(e.seed for e in episodes) == list(range(EPISODES))
    plans = {e.seed: planned(e.seed) for e in episodes}
    for episode in episodes:
        length, fault, turn = plans[episode.seed]
        if fault is None:
            assert episode.outcome == "completed" and episode.num_turns == length, episode
        else:
            assert episode.failure is not None and episode.failure.kind == INJECTED[fault][1], episode
            assert episode.num_turns == turn and episode.failure.turn == turn - 1
    hangs = sum(1 for length, fault, turn in plans.values() if fault == "hang")
    assert 50 < hangs < 150 and sum(1 for e in episodes if not e.valid) > 500

    # bounded by the deadlines, not by the hangs: one after another they would take far longer
    assert took < DEADLINE < hangs * EPISODE_DEADLINE / 4

    # nothing the hangs started is left: their processes were killed as their environments closed
    settle_by = time.monotonic() + 15
    while (leftover_processes(marker) or threading.active_count() > threads_before + 2) and time.monotonic() < settle_by:
        time.sleep(0.1)
    assert leftover_processes(marker) == []
    assert threading.active_count() <= threads_before + 2

    # ReBN over the batch, told which episodes count, is ReBN over the valid episodes alone
    rewards = [[t.reward if e.valid else float("nan") for t in e.turns] for e in episodes]
    valid = [e.valid for e in episodes]
    together = estimate("rebn", rewards, gamma=0.9, valid=valid)
    alone = iter(estimate("rebn", [r for r, v in zip(rewards, valid) if v], gamma=0.9))
    for advantages, is_valid in zip(together, valid):
        expected = next(alone) if is_valid else np.zeros(len(advantages))
        np.testing.assert_allclose(advantages, expected, rtol=1e-9, atol=1e-12)

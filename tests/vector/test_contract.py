"""The vector contract apart from its executors: every executor gives the same rows, the sync
mode is a plain loop, and the names importable before the split still are."""

import asyncio
import random
import threading

import pytest

import gem_core
from gem_core.vector import FAULT, VectorEnv
from gem_core.vector.calls import run
from gem_core.vector.execution import INLINE
from tests.vector.envs import Countdown, Faulty, Sleepy


class Reversed(VectorEnv):
    """A minimal executor: runs each batch's calls inline, last slot first."""

    def _route(self, env):
        return INLINE

    def _execute(self, calls):
        for call in reversed(calls):
            if not call.finished:
                run(self.envs[call.slot], call)

    async def _aexecute(self, calls):
        self._execute(calls)


def mixed_slots():
    # a fault schedule per instance: a step that raises, a reset that raises, a malformed step
    return [lambda: Countdown(length=None), lambda: Faulty({2: "raise", 7: "raise", 11: "malformed"}, length=2),
            lambda: Sleepy(0.0005, length=None), lambda: Countdown(length=2, truncate=True)]


def transcript(vec, steps=40, asynchronous=False):
    """Every row ``vec`` returns for seeded random actions (tracebacks left out: where a call ran
    shows in them)."""
    rng = random.Random(1)

    def rows(result):
        observations, rewards, terminated, truncated, infos = result
        infos = [{k: ({**v, "traceback": None} if k == FAULT else v) for k, v in i.items()} for i in infos]
        return list(zip(observations, rewards.tolist(), terminated.tolist(), truncated.tolist(), infos))

    async def play():
        out = [await vec.areset(seed=3)]
        for _ in range(steps):
            out.append(rows(await vec.astep([str(rng.randint(0, 9)) for _ in range(vec.num_envs)])))
        return out

    if asynchronous:
        return asyncio.run(play())
    out = [vec.reset(seed=3)]
    for _ in range(steps):
        out.append(rows(vec.step([str(rng.randint(0, 9)) for _ in range(vec.num_envs)])))
    return out


@pytest.mark.parametrize("autoreset", ["next_step", "same_step"])
def test_every_executor_gives_the_same_rows(autoreset):
    with gem_core.make_vec(mixed_slots(), mode="sync", autoreset=autoreset) as vec:
        expected = transcript(vec)
    assert any(FAULT in info for row in expected[1:] for *_, info in row)  # the faults did happen
    runs = {}
    for name, make in [("async", lambda: gem_core.make_vec(mixed_slots(), mode="async", autoreset=autoreset)),
                       ("sync with step_timeout", lambda: gem_core.make_vec(mixed_slots(), mode="sync",
                                                                           autoreset=autoreset, step_timeout=30)),
                       ("a plugged-in executor", lambda: Reversed(mixed_slots(), autoreset=autoreset))]:
        for asynchronous in (False, True):
            with make() as vec:
                runs[name, asynchronous] = transcript(vec, asynchronous=asynchronous)
    for key, rows in runs.items():
        assert rows == expected, key


def test_sync_mode_is_a_plain_loop_in_the_callers_thread():
    before = set(threading.enumerate())
    with gem_core.make_vec(lambda: Countdown(length=2), 3, mode="sync", autoreset="same_step") as vec:
        vec.reset()
        for _ in range(5):
            vec.step(["a"] * 3)
        assert not set(threading.enumerate()) - before  # no worker thread, no event-loop thread
        assert {t for env in vec.envs for t in env.threads} == {threading.get_ident()}

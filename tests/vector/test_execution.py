"""Where environment calls run: inline, in worker threads, or awaited; and concurrency.

Concurrency is shown without timing: the blocking environments meet at a barrier and the
native-async ones at a rendezvous, which only succeed when all slots run at the same time.
"""

import asyncio
import threading

import pytest

import gem_core
from gem_core import Wrapper
from gem_core.vector import FAULT, AsyncVectorEnv, execution_kind
from gem_core.wrappers import HistoryWrapper
from tests.vector.envs import AsyncMeeting, Countdown, MeetingPoint, NativeAsync, Sleepy


class SyncOnlyWrapper(Wrapper):
    def step(self, action):
        return self.env.step(action.upper())


def test_execution_kind():
    assert execution_kind(Countdown()) == "inline"
    assert execution_kind(Sleepy()) == "thread"
    assert execution_kind(Wrapper(Sleepy())) == "thread"
    assert execution_kind(NativeAsync()) == "await"
    assert execution_kind(HistoryWrapper(NativeAsync(), "concat")) == "await"  # passes async through
    assert execution_kind(SyncOnlyWrapper(NativeAsync())) == "thread"  # would hide the async methods


def test_cheap_environments_run_inline_in_async_mode():
    with gem_core.make_vec(Countdown, 4, mode="async") as vec:
        vec.reset()
        for _ in range(5):
            vec.step(["a"] * 4)
        threads = {t for env in vec.envs for t in env.threads}
    assert threads == {threading.get_ident()}


def test_blocking_environments_run_concurrently_in_worker_threads_in_async_mode():
    barrier = threading.Barrier(4, timeout=10)
    with gem_core.make_vec(lambda: MeetingPoint(barrier), 4, mode="async") as vec:
        vec.reset()
        for _ in range(4):  # every step of every slot meets the other three
            obs, rewards, term, trunc, infos = vec.step(["a"] * 4)
            assert not any(FAULT in i for i in infos), infos
        threads = {t for env in vec.envs for t in env.threads}
    assert len(threads) >= 4 and threading.get_ident() not in threads


def test_sync_mode_runs_blocking_environments_in_the_callers_thread():
    with gem_core.make_vec(lambda: Sleepy(0.001), 3, mode="sync") as vec:
        vec.reset()
        vec.step(["a"] * 3)
        assert {t for env in vec.envs for t in env.threads} == {threading.get_ident()}


def test_native_async_environments_are_awaited_concurrently():
    meeting = AsyncMeeting(4)
    with gem_core.make_vec(lambda: NativeAsync(meeting), 4, mode="async") as vec:
        vec.reset()
        for _ in range(3):
            obs, rewards, *_, infos = vec.step(["a"] * 4)
            assert not any(FAULT in i for i in infos), infos
            assert rewards.tolist() == [rewards[0]] * 4
        loops = {loop for env in vec.envs for loop in env.loops}
    assert len(loops) == 1  # the vector environment's own loop, not a new one per step


def test_astep_awaits_on_the_callers_loop_and_runs_blocking_ones_in_threads():
    barrier = threading.Barrier(2, timeout=10)
    meeting = AsyncMeeting(2)
    factories = [Countdown, lambda: MeetingPoint(barrier), lambda: MeetingPoint(barrier),
                 lambda: NativeAsync(meeting), lambda: NativeAsync(meeting)]

    async def main(vec):
        obs, infos = await vec.areset(seed=1)
        results = []
        for _ in range(3):
            results.append(await vec.astep(["a", "b", "c", "d", "e"]))
        return asyncio.get_running_loop(), obs, results

    with AsyncVectorEnv(factories) as vec:
        loop, obs, results = asyncio.run(main(vec))
        assert {l for env in vec.envs[3:] for l in env.loops} == {loop}
    for obs, rewards, term, trunc, infos in results:
        assert not any(FAULT in i for i in infos), infos
        assert [o.split(" got ")[1] for o in obs if " got " in o] == [a for o, a in zip(obs, "abcde") if " got " in o]


def test_sync_mode_awaits_native_async_environments_one_at_a_time():
    with gem_core.make_vec(NativeAsync, 3, mode="sync") as vec:
        vec.reset()
        obs, rewards, *_ = vec.step(["a", "b", "c"])
        assert [o[-1] for o in obs] == ["a", "b", "c"] and rewards.tolist() == [1.0] * 3


def test_step_works_from_code_running_inside_an_event_loop():
    async def notebook_cell():
        with gem_core.make_vec(NativeAsync, 2, mode="async") as vec:
            vec.reset()
            return vec.step(["a", "b"])[0]

    assert [o[-1] for o in asyncio.run(notebook_cell())] == ["a", "b"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_mixed_slots_keep_their_order(mode):
    factories = [Countdown, lambda: Sleepy(0.001), NativeAsync, Countdown, lambda: Sleepy(0.001)]
    with gem_core.make_vec(factories, mode=mode, seed=3) as vec:
        first, _ = vec.reset()
        assert first == [Countdown(3).reset(seed=3 + i)[0] for i in range(5)]
        obs, *_ = vec.step(list("vwxyz"))
        assert [o[-1] for o in obs] == list("vwxyz")
        obs, *_ = vec.step(list("zyx"), indices=[4, 2, 0])
        assert [o[-1] for o in obs] == list("zyx")


class UndeclaredWaiter(Countdown):
    """Waits 5 ms per step without declaring ``blocking`` (as a subprocess or socket call would)."""

    def step(self, action):
        threading.Event().wait(0.005)
        return super().step(action)


class DeclaredCheap(Countdown):
    blocking = False


def routes(vec):
    return [slot.route for slot in vec._slots]


def test_an_undeclared_environment_that_waits_moves_to_threads_after_its_first_calls():
    with gem_core.make_vec(lambda: UndeclaredWaiter(length=None), 4, mode="async") as vec:
        vec.reset()
        assert routes(vec) == ["probe"] * 4
        for _ in range(3):
            vec.step(["a"] * 4)
        assert routes(vec) == ["thread"] * 4
        vec.step(["a"] * 4)
        threads = {t for env in vec.envs for t in env.threads[-1:]}
    assert threading.get_ident() not in threads  # its calls now run in worker threads


def test_cheap_or_declared_environments_stay_inline():
    with gem_core.make_vec(lambda: Countdown(length=None), 2, mode="async") as cheap, \
            gem_core.make_vec(DeclaredCheap, 2, mode="async") as declared, \
            gem_core.make_vec(UndeclaredWaiter, 2, mode="sync") as sync:
        for vec in (cheap, declared, sync):
            vec.reset()
            for _ in range(4):
                vec.step(["a"] * 2)
        assert routes(cheap) == ["inline"] * 2  # probed, then kept inline
        assert routes(declared) == ["inline"] * 2 and routes(sync) == ["inline"] * 2  # never probed

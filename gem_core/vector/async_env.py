"""The async mode of :func:`gem_core.make_vec`: the slots stepped at the same time."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

from gem_core.core import Env
from gem_core.vector.base import Row, VectorEnv, Slot
from gem_core.vector.calls import Call, run
from gem_core.vector.execution import INLINE, PROBE, THREAD, Job, Probe, Runner, concurrent_route

logger = logging.getLogger("gem_core.vector")


class AsyncVectorEnv(VectorEnv):
    """Steps its slots at the same time: native-async environments are awaited concurrently,
    blocking ones (``Env.blocking``) run in worker threads, and the others run inline in the
    caller's thread, paying no thread hop (unless a limit bounds the call: then in a worker
    thread too). An environment that does not declare ``blocking`` has its first calls timed to
    choose (see :mod:`gem_core.vector.execution`). Calls begun with :meth:`begin_step` run
    while the caller goes on."""

    concurrent = True

    def __init__(self, env_fns: Sequence[Callable[[], Env]], **options: Any):
        self._runner = Runner(f"gem-vector-{id(self):x}")
        self._probes: dict[int, Probe] = {}  # slots whose route is being probed
        self._all_inline = True  # every slot inline or probed: step without Call objects
        super().__init__(env_fns, **options)

    def _route(self, env: Env) -> str:
        return concurrent_route(env, self.step_timeout)

    def _build(self, slot: Slot) -> None:
        super()._build(slot)
        if slot.route == PROBE:
            self._probes[slot.index] = Probe()
        self._routes_changed()

    def _step_rows(self, slots: Sequence[int], actions: Sequence[str], time_left: Sequence[float | None]) -> list[Row]:
        if not self._all_inline or any(limit is not None for limit in time_left):
            return super()._step_rows(slots, actions, time_left)
        rows = []
        for index, action in zip(slots, actions):
            if self._slots[index].route == PROBE:
                rows.append(self._probed(index, self._step_inline, index, action))
            else:
                rows.append(self._step_inline(index, action))
        return rows

    def _execute(self, calls: list[Call]) -> None:
        self._runner.run(self._jobs(calls), loop=self._loop, inline=self._run_inline)

    async def _aexecute(self, calls: list[Call]) -> None:
        await self._runner.arun(self._jobs(calls), inline=self._run_inline)

    def _launch(self, calls: list[Call]) -> None:
        try:
            loop = asyncio.get_running_loop()  # begun from a coroutine: native-async calls run on its loop
        except RuntimeError:
            loop = self._loop.loop
        self._runner.launch(self._jobs(calls), self._finished.put, loop=loop, inline=self._run_inline)

    def _jobs(self, calls: list[Call]) -> list[Job]:
        """``(route, env, call)`` of the calls to run; a call under a limit never runs inline."""
        jobs = []
        for call in calls:
            if call.finished:
                continue
            slot = self._slots[call.slot]
            route = THREAD if call.deadline is not None and slot.route in (INLINE, PROBE) else slot.route
            call.route = route
            jobs.append((route, slot.env, call))
        return jobs  # type: ignore[return-value]

    def _run_inline(self, env: Env, call: Call) -> None:
        if self._slots[call.slot].route == PROBE:
            self._probed(call.slot, run, env, call)
        else:
            run(env, call)

    def _probed(self, index: int, call: Callable[..., Any], *args: Any) -> Any:
        """``call(*args)``, timed for the probe of slot ``index``; settles its route after the
        probe's last call."""
        started = Probe.start()
        try:
            return call(*args)
        finally:
            probe = self._probes.get(index)
            route = probe.record(started) if probe is not None else None
            if route is not None:
                self._settle(self._slots[index], route)

    def _settle(self, slot: Slot, route: str) -> None:
        probe = self._probes.pop(slot.index)
        slot.route = route
        if route == THREAD:
            logger.info("Slot %d (%s) waits %.2g ms per call: its calls now run in worker threads "
                        "(declare `blocking` on the environment to decide this yourself).",
                        slot.index, slot.env_id, 1e3 * probe.waited / probe.calls)
        self._routes_changed()

    def _routes_changed(self) -> None:
        self._all_inline = all(s.route in (INLINE, PROBE) for s in self._slots if s.env is not None)

    def _give_up_call(self, call: Call) -> None:
        self._runner.give_up(self._slots[call.slot].env, call)

    def _stop_execution(self) -> None:
        self._runner.close()

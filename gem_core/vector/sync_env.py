"""The sync mode of :func:`gem_core.make_vec`: the slots stepped one after another."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from gem_core.core import Env
from gem_core.vector.base import Row, VectorEnv
from gem_core.vector.calls import Call, run
from gem_core.vector.execution import INLINE, THREAD, Job, Runner, sequential_route


class SyncVectorEnv(VectorEnv):
    """Steps its slots one after another in the caller's thread.

    Two kinds of call leave the caller's thread, still one at a time: a native-async
    environment's are awaited (on the caller's loop under :meth:`astep`), and a call under a
    limit (``step_timeout``, ``time_left``) runs in a worker thread, so that a hung one can be
    given up. Calls begun with :meth:`begin_step` run as they begin. A call whose turn comes
    after its deadline passed (behind a slow one) never starts.
    """

    def __init__(self, env_fns: Sequence[Callable[[], Env]], **options: Any):
        self._runner = Runner(f"gem-vector-{id(self):x}")  # starts no thread until a call needs one
        super().__init__(env_fns, **options)

    def _route(self, env: Env) -> str:
        return sequential_route(env, self.step_timeout)

    def _step_rows(self, slots: Sequence[int], actions: Sequence[str], time_left: Sequence[float | None]) -> list[Row]:
        rows = []
        for index, action, limit in zip(slots, actions, time_left):
            if self._slots[index].route == INLINE and limit is None:
                rows.append(self._step_inline(index, action))
            else:
                call = self._step_call(index, action, limit)
                self._execute([call])
                rows.append(self._row(call))
        return rows

    def _execute(self, calls: list[Call]) -> None:
        for job in self._run_inline_calls(calls):
            self._runner.run([job], loop=self._loop)

    async def _aexecute(self, calls: list[Call]) -> None:
        for job in self._run_inline_calls(calls):  # awaited on the caller's loop, or threads it waits for
            await self._runner.arun([job])

    def _run_inline_calls(self, calls: list[Call]) -> Iterator[Job]:
        """Run ``calls`` in order: inline slots' here, the others' (awaited, or in a worker
        thread that can be given up at the call's limit) by the consumer of the jobs this
        yields, one at a time. A call reached with no time left never starts."""
        for call in calls:
            slot = self._slots[call.slot]
            if not call.finished and call.deadline is not None and call.deadline <= time.monotonic():
                call.timed_out = call.finished = True
            if call.finished:
                continue
            if slot.route == INLINE and call.deadline is None:
                run(slot.env, call)  # type: ignore[arg-type]
            else:
                yield (THREAD if slot.route == INLINE else slot.route), slot.env, call  # type: ignore[misc]

    def _stop_execution(self) -> None:
        self._runner.close()

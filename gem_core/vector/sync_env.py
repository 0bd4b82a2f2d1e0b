"""The sync mode of :func:`gem_core.make_vec`: the slots stepped one after another."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from gem_core.core import Env
from gem_core.vector.base import Row, VectorEnv
from gem_core.vector.calls import Call, run
from gem_core.vector.execution import INLINE, Job, Runner, sequential_route


class SyncVectorEnv(VectorEnv):
    """Steps its slots one after another in the caller's thread.

    Two kinds of call leave the caller's thread, still one at a time: a native-async
    environment's are awaited (on the caller's loop under :meth:`astep`), and with
    ``step_timeout`` every call runs in a worker thread, so that a hung one can be abandoned.
    """

    def __init__(self, env_fns: Sequence[Callable[[], Env]], **options: Any):
        self._runner = Runner(f"gem-vector-{id(self):x}")  # starts no thread until a call needs one
        super().__init__(env_fns, **options)

    def _route(self, env: Env) -> str:
        return sequential_route(env, self.step_timeout)

    def _step_rows(self, slots: Sequence[int], actions: Sequence[str]) -> list[Row]:
        rows = []
        for index, action in zip(slots, actions):
            if self._slots[index].route == INLINE:
                rows.append(self._step_inline(index, action))
            else:
                call = self._step_call(index, action)
                self._execute([call])
                rows.append(self._row(call))
        return rows

    def _execute(self, calls: list[Call]) -> None:
        for job in self._run_inline_calls(calls):
            self._runner.run([job], loop=self._loop, timeout=self.step_timeout)

    async def _aexecute(self, calls: list[Call]) -> None:
        for job in self._run_inline_calls(calls):  # awaited on the caller's loop, or threads it waits for
            await self._runner.arun([job], timeout=self.step_timeout)

    def _run_inline_calls(self, calls: list[Call]) -> Iterator[Job]:
        """Run ``calls`` in order: inline slots' here, the others' (awaited, or in a worker
        thread that can be abandoned) by the consumer of the jobs this yields, one at a time."""
        for call in calls:
            slot = self._slots[call.slot]
            if call.finished:
                continue
            if slot.route == INLINE:
                run(slot.env, call)  # type: ignore[arg-type]
            else:
                yield slot.route, slot.env, call  # type: ignore[misc]

    def _stop_execution(self) -> None:
        self._runner.close()

"""The host of the Ray mode: one actor process on a node, running many slots' environments.

A vector environment in Ray mode leases slots on hosts. The driver keeps every slot's seeds and
autoreset state; a host only runs the calls it is sent (one batch per host per step) with the
same executor as the async mode (inline, worker threads or awaited, ``step_timeout`` enforced),
and builds each environment from its :class:`EnvRecipe`: an env id, keyword arguments and
registered wrapper names, never a pickled closure.

This module imports Ray only inside :func:`host_actor_class`.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gem_core.core import Env
from gem_core.errors import GemError, UnknownEnvError
from gem_core.vector.async_env import AsyncVectorEnv
from gem_core.vector.base import Slot
from gem_core.vector.calls import Call, close_now, close_quietly
from gem_core.vector.workers import Finished


@dataclass(frozen=True)
class EnvRecipe:
    """How a host builds one slot's environment: ``make(env_id, **kwargs)`` wrapped in the
    registered wrappers ``wrappers`` (with ``wrapper_options``). ``entry_point``,
    ``registered_kwargs`` and ``registered_wrappers`` describe the driver's registration, used
    only when the host's own plugins do not register ``env_id`` (an id registered by a script)."""

    env_id: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    wrappers: Any = None
    wrapper_options: Mapping[str, Any] | None = None
    entry_point: str | None = None
    registered_kwargs: Mapping[str, Any] = field(default_factory=dict)
    registered_wrappers: tuple = ()

    def build(self) -> Env:
        from gem_core.registry import make
        from gem_core.wrappers.chain import chain_factory

        self.resolve()
        wrap = chain_factory(self.wrappers, self.wrapper_options)
        return wrap(make(self.env_id, **self.kwargs))

    def resolve(self) -> None:
        """Make sure ``env_id`` is registered here and its entry point imports (raises otherwise)."""
        from gem_core import registry

        try:
            env_spec = registry.spec(self.env_id)
        except UnknownEnvError:
            if self.entry_point is None:
                raise
            try:
                env_spec = registry.register(self.env_id, self.entry_point, kwargs=self.registered_kwargs,
                                             wrappers=self.registered_wrappers, source="the driver's registration")
            except GemError:  # registered meanwhile by another lease's thread
                env_spec = registry.spec(self.env_id)
        if env_spec.missing_extras:
            raise GemError(f"{self.env_id} needs the extra(s) {', '.join(env_spec.missing_extras)} "
                           f"(pip install 'gem-adapters[{','.join(env_spec.missing_extras)}]').")
        env_spec.load()  # imports the entry point's module


#: How many leases' batches one host runs at the same time (each in its own thread).
MAX_CONCURRENT_LEASES = 64

#: What a host sends back for one call: ``(phase, step_result, reset_result, fault)``.
Outcome = tuple[str, Any, Any, "dict[str, Any] | None"]
#: What a host is sent for one call: ``(slot, action, seed, reset_after_end, recipe or None,
#: time_left or None)``; ``time_left`` is seconds, measured on the host's clock from when the
#: batch arrives.
Request = tuple[int, "str | None", int, bool, "EnvRecipe | None", "float | None"]


class LeasedSlots(AsyncVectorEnv):
    """One lease's slots on a host: the async mode's executor and fault handling, without its
    seeds and autoreset (the driver keeps those). Slots are numbered as in the driver's vector
    environment; only those placed on this host are ever built. Several batches of one lease
    may run at once (on different slots), each in an actor thread of its own."""

    def __init__(self, num_envs: int, step_timeout: float | None):
        self._opening = True
        super().__init__([_unplaced] * num_envs, env_ids=[""] * num_envs, step_timeout=step_timeout)
        self._opening = False
        self._reset_done = True  # the driver resets
        self._lock = threading.Lock()  # the slots' bookkeeping, across the batches running at once

    def _build(self, slot: Slot) -> None:
        if not self._opening:  # environments are built at a slot's first call
            super()._build(slot)

    def run(self, requests: Sequence[Request]) -> list[Outcome]:
        """Run one batch of calls concurrently; return each call's outcome in order."""
        calls = self._calls(requests)
        self._execute(calls)
        return [self._outcome(call) for call in calls]

    def stream(self, requests: Sequence[Request]) -> Iterator[list[tuple[int, Outcome]]]:
        """Run one batch of calls concurrently, handing over ``(position, outcome)`` pairs as
        the calls finish (or are given up at their limit)."""
        calls = self._calls(requests)
        position = {id(call): k for k, call in enumerate(calls)}
        done: Finished[Call] = Finished()
        for call in calls:
            if call.finished:
                done.put(call)
        self._runner.launch(self._jobs(calls), done.put, loop=self._loop.loop, inline=self._run_inline)
        left = len(calls)
        while left:
            part = done.take()
            left -= len(part)
            yield [(position[id(call)], self._outcome(call)) for call in part]

    def _calls(self, requests: Sequence[Request]) -> list[Call]:
        now = time.monotonic()
        calls = []
        with self._lock:
            for index, action, seed, reset_after_end, recipe, time_left in requests:
                slot = self._slots[index]
                if recipe is not None:  # the slot is (re)placed here: build afresh from its recipe
                    if slot.env is not None:
                        close_now(slot.env)  # its call may still hang in a batch given up on
                        slot.env = None
                    slot.factory, slot.env_id = recipe.build, recipe.env_id
                call = Call(index, action, seed, reset_after_end)
                call.bound(now, self.step_timeout, time_left)
                if time_left is not None and time_left <= 0:
                    call.timed_out = call.finished = True
                elif slot.env is None:
                    try:
                        self._build(slot)
                    except Exception as e:
                        call.fail(e)
                calls.append(call)
        return calls

    def _outcome(self, call: Call) -> Outcome:
        # _fault closes and drops an environment that timed out or failed to reset, as in the
        # other modes; the next call of its slot builds a fresh one.
        with self._lock:
            return call.phase, call.step_result, call.reset_result, self._fault(call)

    def sample(self, index: int) -> str:
        """A random well-formed action for slot ``index``'s current state."""
        env = self._slots[index].env
        if env is None:
            raise GemError(f"Slot {index} has no environment here yet: reset it first.")
        return env.sample_random_action()

    def drop(self, indices: Sequence[int]) -> None:
        """Close the environments of ``indices`` (slots quarantined or moved away)."""
        for index in indices:
            slot = self._slots[index]
            if slot.env is not None:
                close_quietly(slot.env)
                slot.env = None
            slot.factory = _unplaced


def _unplaced() -> Env:
    raise GemError("This slot has no environment recipe on this host.")


class EnvHost:
    """A host actor: holds the slots of any number of leases (one per vector environment that
    uses it), at most ``capacity`` slots in all (None: no limit)."""

    def __init__(self, capacity: int | None = None):
        import ray

        context = ray.get_runtime_context()
        self.node_id = context.get_node_id()
        self.where = f"node {ray.util.get_node_ip_address()} ({self.node_id[:12]})"
        self.capacity = capacity
        self._leases: dict[str, LeasedSlots] = {}
        self._sizes: dict[str, int] = {}
        self._lock = threading.Lock()

    def describe(self) -> tuple[str, str]:
        """``(node id, "node IP (id)")`` of this host."""
        return self.node_id, self.where

    def open(self, lease: str, num_envs: int, slots_here: int, step_timeout: float | None,
             recipes: Sequence[EnvRecipe]) -> str:
        """Start (or grow) a lease that places ``slots_here`` slots here, after checking that
        this node can make every recipe. Returns where this host runs."""
        for recipe in {r.env_id: r for r in recipes}.values():
            try:
                recipe.resolve()
            except Exception as e:
                raise GemError(f"The environment host on {self.where} cannot make {recipe.env_id}: {e} "
                               "Install the package that provides it on that node (the same gem-adapters "
                               "extras and plugins as the driver).") from None
        with self._lock:
            used = sum(self._sizes.values()) - self._sizes.get(lease, 0)
            wanted = self._sizes.get(lease, 0) + slots_here
            if self.capacity is not None and used + wanted > self.capacity:
                raise GemError(f"The environment host on {self.where} holds {used} of its {self.capacity} "
                               f"slots; a lease of {wanted} more does not fit (raise slots_per_host or hosts).")
            self._sizes[lease] = wanted
            if lease not in self._leases:
                self._leases[lease] = LeasedSlots(num_envs, step_timeout)
        return self.where

    def run(self, lease: str, requests: Sequence[Request]) -> list[Outcome]:
        """Run one batch of a lease's calls (see :meth:`LeasedSlots.run`)."""
        return self.run_on(lease).run(requests)

    def stream(self, lease: str, requests: Sequence[Request]) -> Iterator[list[tuple[int, Outcome]]]:
        """Run one batch of a lease's calls, handing the outcomes over as they come (a Ray
        streaming generator; see :meth:`LeasedSlots.stream`)."""
        yield from self.run_on(lease).stream(requests)

    def run_on(self, lease: str) -> LeasedSlots:
        try:
            return self._leases[lease]
        except KeyError:
            raise GemError(f"The environment host on {self.where} holds no lease {lease!r} "
                           "(it was released).") from None

    def sample(self, lease: str, index: int) -> str:
        """:meth:`LeasedSlots.sample` of a lease."""
        return self.run_on(lease).sample(index)

    def drop(self, lease: str, indices: Sequence[int]) -> None:
        """Close some slots' environments of a lease."""
        slots = self._leases.get(lease)
        if slots is not None:
            slots.drop(indices)
            with self._lock:
                self._sizes[lease] = max(0, self._sizes.get(lease, 0) - len(indices))

    def retire(self, lease: str, indices: Sequence[int]) -> None:
        """Close some slots' environments of a lease, which stay here (their next call brings
        their recipe, and builds them afresh)."""
        slots = self._leases.get(lease)
        if slots is not None:
            slots.drop(indices)

    def release(self, lease: str) -> None:
        """Close every environment of a lease."""
        with self._lock:
            slots = self._leases.pop(lease, None)
            self._sizes.pop(lease, None)
        if slots is not None:
            slots.close()

    def leases(self) -> dict[str, int]:
        """Each open lease's number of slots here."""
        with self._lock:
            return dict(self._sizes)


@functools.lru_cache(maxsize=1)
def host_actor_class() -> Any:
    """:class:`EnvHost` as a Ray actor class. Never restarted, and its calls are never retried:
    a retried ``step`` would be applied twice; a lost host's episodes are replayed by the driver
    instead."""
    import ray

    return ray.remote(max_restarts=0, max_task_retries=0, max_concurrency=MAX_CONCURRENT_LEASES)(EnvHost)

"""The Ray mode of :func:`gem_core.make_vec`: slots run on host actors across a Ray cluster.

The vector environment's contract is the sync and async modes' (see :mod:`gem_core.vector.base`):
this process keeps every slot's seeds and autoreset state, and each step sends one batch per host
(the calls of the slots placed there) and waits for all of them, within ``step_timeout`` plus the
pool's ``call_timeout``. Calls begun with ``begin_step``/``begin_reset`` go to their hosts as a
streaming task each, which hands every call's outcome back as it finishes, so a slow slot holds
back no other.

Deadlines (``time_left``): the host gives a call up at its deadline as the in-process modes do
(its environment closed at once, its worker thread replaced) and answers. A host that has not
answered :data:`DEADLINE_GRACE_S` seconds after the deadlines of the calls it holds has its task
cancelled: those calls end with a fault of kind ``"deadline"``, and their slots' environments are
built afresh on their next call (the host closes the old ones then).

A lost host (its process or node died, or it stayed silent past that limit) loses no slot: each
call that was in flight there ends with a fault of kind ``"host_lost"`` (``host`` names where it
ran, ``error`` what happened), and its slot moves to the live host holding the fewest slots,
where its environment is built afresh. A lost step ends its episode truncated, like any fault;
:func:`gem_core.collect_episodes` plays such an episode again from its seed. A lost reset is
retried with the same seed (the episode never started). Calls are never retried by Ray (a
retried ``step`` would be applied twice). When no live host is left, the step raises
:class:`~gem_core.GemError`.

An anonymous pool starts a host in place of each lost one, wherever the cluster offers the
resource; the step does not wait for it. Once it answers, slots move to it as their episodes start
(never mid-episode) until the hosts hold even shares. A named pool's lost hosts are started again
by the next vector environment that starts on the pool.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any

from gem_core.errors import GemError
from gem_core.vector.base import FAULT, AutoresetMode, VectorEnv, Slot
from gem_core.vector.calls import Call
from gem_core.vector.ray_host import EnvRecipe, Outcome
from gem_core.vector.ray_pool import RayPool, import_ray

logger = logging.getLogger("gem_core.vector")

HOST_LOST = "host_lost"
#: Seconds past its calls' deadlines that a host may take to answer before its task is cancelled
#: (at most the pool's ``call_timeout``).
DEADLINE_GRACE_S = 5.0


class _Reported(Exception):
    """A fault report made elsewhere (by a host, or for a lost host), carried on a :class:`Call`."""

    def __init__(self, fault: dict[str, Any]):
        super().__init__(fault.get("error", fault["kind"]))
        self.fault = fault


class _Host:
    __slots__ = ("actor", "node_id", "where", "alive", "slots")

    def __init__(self, actor: Any, node_id: str, where: str):
        self.actor, self.node_id, self.where = actor, node_id, where
        self.alive = True
        self.slots: set[int] = set()


class RayVectorEnv(VectorEnv):
    """A vector environment whose slots run on Ray host actors; see :mod:`gem_core.vector.ray_env`
    and :func:`gem_core.make_vec` (``mode="ray"``). :attr:`envs` is all None: the environments
    live on the hosts. :attr:`hosts` says where each slot runs."""

    concurrent = True

    def __init__(self, recipes: Sequence[EnvRecipe], *, pool: RayPool | None = None, seed: int | None = 0,
                 autoreset: str | AutoresetMode = AutoresetMode.NEXT_STEP, step_timeout: float | None = None):
        super().__init__([_remote] * len(recipes), env_ids=[r.env_id for r in recipes], seed=seed,
                         autoreset=autoreset, step_timeout=step_timeout)
        self._ray = import_ray()
        self.pool = pool or RayPool()
        self._recipes = list(recipes)
        self._lease = uuid.uuid4().hex
        self._hosts: list[_Host] = []
        self._host_of: list[int] = [0] * self.num_envs
        self._placed: set[int] = set()  # slots whose current host has their recipe
        self._starting: list[tuple[Any, Any]] = []  # (actor, its describe() reply) of hosts replacing lost ones
        self._losses: list[tuple[int, str]] = []  # hosts found lost by a stream, for this thread to handle
        try:
            self._start_hosts()
        except BaseException:
            self.close()
            raise

    # ---- what differs from the in-process modes ------------------------------------------------

    @property
    def hosts(self) -> list[str]:
        """Where each slot runs now (node IP and id of its host)."""
        return [self._hosts[h].where for h in self._host_of]

    def sample_random_action(self, index: int) -> str:
        """A random well-formed action for slot ``index``'s current state, drawn on its host."""
        host = self._hosts[self._host_of[self._indices([index])[0]]]
        ray = self._ray
        try:
            return ray.get(host.actor.sample.remote(self._lease, index), timeout=self.pool.call_timeout)
        except ray.exceptions.RayTaskError as e:
            raise _cause(e) from None
        except (ray.exceptions.RayError, ray.exceptions.GetTimeoutError) as e:
            raise GemError(f"The environment host on {host.where} did not answer: {e}") from None

    def quarantine(self, index: int, report: Any) -> None:
        super().quarantine(index, report)
        host = self._hosts[self._host_of[index]]
        if host.alive:
            host.actor.drop.remote(self._lease, [index])  # fire and forget: nothing waits on it
        self._placed.discard(index)

    def retire(self, indices: Sequence[int]) -> None:
        super().retire(indices)
        for index in self._indices(indices):
            host = self._hosts[self._host_of[index]]
            if host.alive and index in self._placed:
                host.actor.retire.remote(self._lease, [index])  # fire and forget; rebuilt at the next call
            self._placed.discard(index)

    def _give_up_call(self, call: Call) -> None:
        call.give_up()  # its host's answer, when it comes, is dropped
        self._placed.discard(call.slot)

    def close(self) -> None:
        if getattr(self, "_closed", True):
            return
        super().close()
        for actor, _ in getattr(self, "_starting", []):
            self._ray.kill(actor, no_restart=True)
        live = [h for h in getattr(self, "_hosts", []) if h.alive]
        if not live:
            return
        if self.pool.name is None:
            for host in live:
                self._ray.kill(host.actor, no_restart=True)
            return
        try:
            self._ray.get([h.actor.release.remote(self._lease) for h in live], timeout=self.pool.start_timeout)
        except Exception as e:  # a host lost meanwhile: its lease went with it
            logger.warning("Releasing the slots of a named pool raised %s: %s", type(e).__name__, e)

    def _build(self, slot: Slot) -> None:
        slot.env, slot.route = None, "remote"

    def _call(self, index: int, action: str | None, seed: int, time_left: float | None = None) -> Call:
        call = Call(index, action, seed, self.autoreset is AutoresetMode.SAME_STEP)
        call.bound(time.monotonic(), self.step_timeout, time_left)
        if time_left is not None and time_left <= 0:
            call.timed_out = call.finished = True
        return call

    def _execute(self, calls: list[Call]) -> None:
        sent = self._send([call for call in calls if not call.finished])
        refs = [ref for ref, _ in sent.values()]
        ready = self._ray.wait(refs, num_returns=len(refs), timeout=self._wait_s(calls))[0] if refs else []
        self._receive(sent, set(ready))

    async def _aexecute(self, calls: list[Call]) -> None:
        sent = self._send([call for call in calls if not call.finished])
        futures = {asyncio.wrap_future(ref.future()): ref for ref, _ in sent.values()}
        done: set[Any] = set()
        if futures:
            done, _ = await asyncio.wait(set(futures), timeout=self._wait_s(calls))
        self._receive(sent, {futures[f] for f in done})

    def _launch(self, calls: list[Call]) -> None:
        for host, (stream, batch) in self._send(calls, streaming=True).items():
            self._loop.submit(self._consume(host, stream, batch))

    def _hand_over(self, calls: list[Call]) -> list[tuple[int, Any]]:
        while self._losses:
            self._lose(*self._losses.pop(0))
        return super()._hand_over(calls)

    def _fault(self, call: Call, cancelled: bool = False) -> dict[str, Any] | None:
        if not isinstance(call.error, _Reported):
            if call.timed_out:  # given up here, not by its host: build it afresh there
                self._placed.discard(call.slot)
            return super()._fault(call, cancelled)
        slot = self._slots[call.slot]
        slot.needs_reset = True
        fault = call.error.fault
        if call.phase == "reset" and fault["kind"] != HOST_LOST:
            slot.next_seed = call.seed + self.num_envs  # type: ignore[operator]  # not tried again
        return fault

    # ---- placement and transport ----------------------------------------------------------------

    def _place(self, index: int, host: int) -> None:
        self._hosts[self._host_of[index]].slots.discard(index)
        self._host_of[index] = host
        self._hosts[host].slots.add(index)
        self._placed.discard(index)

    def _start_hosts(self) -> None:
        """Start (or find) the pool's hosts, place the slots evenly and open the leases. A named
        pool's host found dead (its node went since this process last used it) is replaced once."""
        ray = self._ray
        for attempt in (1, 2):
            self._hosts = [_Host(*started) for started in self.pool.start()]
            self._host_of, self._placed = [0] * self.num_envs, set()
            for index in range(self.num_envs):
                self._place(index, index % len(self._hosts))
            try:
                self._open_leases()
                return
            except ray.exceptions.RayActorError as e:
                self.pool.forget()
                if attempt == 2:
                    raise GemError(f"The environment hosts died as they started: {str(e).splitlines()[0]}") from None

    def _open_leases(self) -> None:
        """Open this vector environment's lease on every host holding slots (each checks that its
        node can make the slots' environments)."""
        ray = self._ray
        opening = [(h.actor.open.remote(self._lease, self.num_envs, len(h.slots), self.step_timeout,
                                        [self._recipes[i] for i in sorted(h.slots)]))
                   for h in self._hosts if h.slots]
        try:
            ray.get(opening, timeout=self.pool.start_timeout)
        except ray.exceptions.RayTaskError as e:
            raise _cause(e) from None
        except ray.exceptions.GetTimeoutError:
            raise GemError(f"The environment hosts did not answer within {self.pool.start_timeout:g} s.") from None

    def _wait_s(self, calls: Sequence[Call]) -> float:
        """How long to wait for the hosts' answers to ``calls``: past each call's deadline by
        :data:`DEADLINE_GRACE_S`, or by ``call_timeout`` beyond ``step_timeout``."""
        now = time.monotonic()
        waits = [self._answer_by(call) - now for call in calls if not call.finished]
        return max(0.0, max(waits, default=0.0))

    def _answer_by(self, call: Call) -> float:
        """When a host must have answered for ``call``."""
        if call.limit == "deadline":
            return call.deadline + min(DEADLINE_GRACE_S, self.pool.call_timeout)  # type: ignore[operator]
        return time.monotonic() + (self.step_timeout or 0.0) + self.pool.call_timeout

    def _send(self, calls: list[Call], streaming: bool = False) -> dict[int, tuple[Any, list[Call]]]:
        """One batch per host: ``{host: (object ref of its outcomes, or their stream, its calls)}``."""
        if self._starting:
            self._adopt_started_hosts()
        self._spread([call.slot for call in calls if call.action is None])
        batches: dict[int, list[Call]] = {}
        for call in calls:
            batches.setdefault(self._host_of[call.slot], []).append(call)
        sent = {}
        now = time.monotonic()
        for host, batch in batches.items():
            requests = []
            for call in batch:
                recipe = None if call.slot in self._placed else self._recipes[call.slot]
                time_left = call.deadline - now if call.limit == "deadline" else None  # type: ignore[operator]
                requests.append((call.slot, call.action, call.seed, call.reset_after_end, recipe, time_left))
            actor = self._hosts[host].actor
            task = (actor.stream if streaming else actor.run).remote(self._lease, requests)
            sent[host] = (task, batch)
        return sent

    async def _consume(self, host: int, stream: Any, batch: list[Call]) -> None:
        """Hand over the outcomes of one host's streamed batch as they come (on the background
        loop); a host silent past its calls' limits has its task cancelled, or is lost."""
        ray = self._ray
        waiting = {k: call for k, call in enumerate(batch)}
        try:
            while waiting:
                answer_by = max(self._answer_by(call) for call in waiting.values())
                try:
                    ref = await asyncio.wait_for(stream.__anext__(), max(0.0, answer_by - time.monotonic()))
                    part = await ref
                except StopAsyncIteration:
                    raise GemError("the host's stream ended early") from None
                for position, outcome in part:
                    call = waiting.pop(position)
                    self._fill(call, outcome)
                    self._finished.put(call)
        except asyncio.TimeoutError:
            if all(call.limit == "deadline" for call in waiting.values()):
                ray.cancel(stream)
                for call in waiting.values():
                    if call.give_up():
                        self._finished.put(call)
                return
            self._stream_lost(host, list(waiting.values()), f"no answer within {self.pool.call_timeout:g} s")
        except ray.exceptions.RayTaskError as e:  # the host ran, and raised: a defect, not a loss
            for call in waiting.values():
                call.fail(_cause(e))
                self._finished.put(call)
        except Exception as e:  # the host died
            self._stream_lost(host, list(waiting.values()),
                              f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")

    def _stream_lost(self, host: int, calls: list[Call], reason: str) -> None:
        self._losses.append((host, reason))
        for call in calls:
            self._lost_call(call, host, reason)
            self._finished.put(call)

    def _fill(self, call: Call, outcome: Outcome) -> None:
        phase, step_result, reset_result, fault = outcome
        call.phase, call.step_result, call.reset_result = phase, step_result, reset_result
        if fault is not None:
            call.error = _Reported(fault)
        call.finished = True
        if not call.left_running:  # (a call given up here has its slot built afresh)
            self._placed.add(call.slot)

    def _lost_call(self, call: Call, host: int, reason: str) -> None:
        fault = {"kind": HOST_LOST, "phase": call.phase, "host": self._hosts[host].where, "error": reason}
        if call.phase == "reset":
            fault["seed"] = call.seed
        call.error = _Reported(fault)
        call.finished = True

    def _receive(self, sent: dict[int, tuple[Any, list[Call]]], ready: set[Any]) -> None:
        ray = self._ray
        lost: list[tuple[int, list[Call], str]] = []
        for host, (ref, batch) in sent.items():
            if ref not in ready:
                if all(call.limit == "deadline" for call in batch):  # late past the deadlines: cancel, not lose
                    ray.cancel(ref)
                    for call in batch:
                        call.give_up()
                        call.finished = True
                    continue
                lost.append((host, batch, f"no answer within {self.pool.call_timeout:g} s"))
                continue
            try:
                outcomes: list[Outcome] = ray.get(ref, timeout=self.pool.call_timeout)
            except ray.exceptions.RayTaskError as e:  # the host ran, and raised: a defect, not a loss
                raise _cause(e) from None
            except (ray.exceptions.RayError, ray.exceptions.GetTimeoutError) as e:  # the host died
                lost.append((host, batch, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"))
                continue
            for call, outcome in zip(batch, outcomes):
                self._fill(call, outcome)
        for host, batch, reason in lost:
            self._lose(host, reason)
            for call in batch:
                self._lost_call(call, host, reason)

    def _lose(self, host: int, reason: str) -> None:
        """Take a host out of service, move its slots to the live hosts (fewest slots first) and,
        for an anonymous pool, start a host in its place."""
        lost = self._hosts[host]
        if not lost.alive:
            return
        lost.alive = False
        self.pool.forget()
        try:
            self._ray.kill(lost.actor, no_restart=True)  # it may only be silent: make sure it is gone
        except Exception:
            pass
        live = [i for i, h in enumerate(self._hosts) if h.alive]
        logger.warning("The environment host on %s is lost (%s); its %d slot(s) move to %d live host(s).",
                       lost.where, reason, len(lost.slots), len(live))
        if not live:
            raise GemError(f"Every environment host of this vector environment is lost (the last: {lost.where}, "
                           f"{reason}). Check the nodes that offer '{self.pool.resource}' (ray status).")
        moved = sorted(lost.slots)
        for index in moved:
            self._place(index, min(live, key=lambda i: len(self._hosts[i].slots)))
        for target in {self._host_of[i] for i in moved}:
            self._open_on(target, [i for i in moved if self._host_of[i] == target])
        if self.pool.name is None:  # a named pool's hosts are started again by the pool's next user
            actor = self.pool.launch(host)
            self._starting.append((actor, actor.describe.remote()))

    def _open_on(self, host: int, slots: list[int]) -> bool:
        """Grow this lease on ``host`` by ``slots``; False when that host is gone (its next batch
        finds out and moves on)."""
        try:
            self._ray.get(self._hosts[host].actor.open.remote(
                self._lease, self.num_envs, len(slots), self.step_timeout, [self._recipes[i] for i in slots]),
                timeout=self.pool.start_timeout)
            return True
        except self._ray.exceptions.RayTaskError as e:
            raise _cause(e) from None
        except Exception as e:
            logger.warning("Opening slots on %s raised %s", self._hosts[host].where, e)
            return False

    def _adopt_started_hosts(self) -> None:
        """Put the hosts started in place of lost ones into service once they answer."""
        ray = self._ray
        ready = set(ray.wait([reply for _, reply in self._starting], num_returns=len(self._starting),
                             timeout=0)[0])
        for actor, reply in [started for started in self._starting if started[1] in ready]:
            self._starting.remove((actor, reply))
            try:
                node_id, where = ray.get(reply, timeout=self.pool.call_timeout)
            except Exception as e:  # it died as it started: the nodes that offer the resource are going
                logger.warning("A host started in place of a lost one failed: %s", e)
                continue
            self._hosts.append(_Host(actor, node_id, where))
            logger.warning("A new environment host on %s replaces a lost one; slots move to it as their "
                           "episodes start.", where)

    def _spread(self, starting: list[int]) -> None:
        """Move slots whose episodes start now (``starting``) from the fullest live hosts to the
        emptiest, until no host holds two more slots than another (after a host joins)."""
        if not starting:
            return
        sizes = {i: len(h.slots) for i, h in enumerate(self._hosts) if h.alive}
        if len(sizes) < 2 or max(sizes.values()) - min(sizes.values()) <= 1:
            return
        moves: dict[int, list[int]] = {}
        for index in starting:
            source, target = self._host_of[index], min(sizes, key=sizes.__getitem__)
            if sizes[source] > sizes[target] + 1:
                sizes[source] -= 1
                sizes[target] += 1
                moves.setdefault(target, []).append(index)
        for target, slots in moves.items():
            if self._open_on(target, slots):
                for index in slots:
                    self._hosts[self._host_of[index]].actor.drop.remote(self._lease, [index])  # nothing waits on it
                    self._place(index, target)

def is_host_lost(info: dict[str, Any]) -> bool:
    """Whether a row's info reports a call lost with its host."""
    fault = info.get(FAULT)
    return isinstance(fault, dict) and fault.get("kind") == HOST_LOST


def _remote() -> Any:
    raise GemError("A Ray-mode slot's environment lives on its host.")


def _cause(error: Any) -> BaseException:
    """The exception a host raised (a :class:`GemError` as is), from Ray's wrapper."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, GemError):
        return cause
    return GemError(f"An environment host failed: {cause or error}")

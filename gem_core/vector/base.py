"""The vector environment contract: many environments stepped as one batch.

:class:`VectorEnv` keeps what every mode shares (seeds, autoreset, fault reports, quarantine,
batched results); a subclass decides where the slots' calls run: one after another
(:class:`~gem_core.vector.sync_env.SyncVectorEnv`), at the same time
(:class:`~gem_core.vector.async_env.AsyncVectorEnv`, with the machinery of
:mod:`gem_core.vector.execution`), or on the host actors of a Ray cluster
(:class:`~gem_core.vector.ray_env.RayVectorEnv`).

Results are batched: observations and infos as lists, rewards and the two done flags as numpy
arrays, one entry per stepped slot in the order asked for.

Autoreset (``autoreset=``):

* ``"next_step"`` (default): a step that ends an episode returns its terminal observation, reward
  and info as they are; the slot's next step resets it (the action given is ignored) and returns
  the new episode's first observation with reward 0 and both flags False.
* ``"same_step"``: the step that ends an episode also resets the slot and returns the new
  episode's first observation and reset info; the episode's last observation and step info are
  kept in that info under ``final_observation`` and ``final_info``, and its reward and flags are
  the returned ones.

Info keys the vector environment adds:

* ``episode_seed`` (int): on every row whose observation is the first of an episode, the seed it
  was reset with (``env.reset(seed=episode_seed)`` replays it).
* ``final_observation``, ``final_info``: same-step autoreset, on rows that ended an episode.
* ``fault`` (dict): the slot's environment failed. ``kind`` is a failure kind of
  :data:`gem_core.episodes.FAILURE_KINDS`: ``"error"`` (it raised), ``"malformed"`` (it returned
  something that is not a transition, a NaN reward included), ``"sandbox"`` (it raised
  :class:`~gem_core.errors.SandboxFailure`), ``"timeout"`` (it ran past ``step_timeout``),
  ``"deadline"`` (it ran past the ``time_left`` its caller gave it: its episode's deadline) or,
  in the Ray mode, ``"host_lost"`` (see :mod:`gem_core.vector.ray_env`); ``phase`` is
  ``"step"`` or ``"reset"``; ``error`` and ``traceback`` describe an error, ``timeout_s`` a
  timeout, ``deadline_s`` the time a call was given. A failed step ends the episode truncated
  with an empty observation and reward 0. A
  failed reset starts no episode: its row has an empty observation and both flags False (under
  same-step autoreset, the row still ends the finished episode), and ``seed`` names the seed it
  failed with. Either way the slot's next step resets it, ignoring the action, with the slot's
  next seed (a failed seed is not tried again). An environment that timed out (or ran past its
  deadline), or failed to reset, is closed and replaced by a fresh one from its factory; one that
  raised in ``step`` is kept and reset. A call given up at its limit has its environment closed
  at once, while the hung call may still run, so that what it started (sandboxes, containers,
  processes) ends then.

Limits: ``step_timeout`` (``make_vec``) bounds every call; ``time_left=`` (``step``, ``reset``
and their async and ``begin_`` forms; a number, or one per slot) bounds one call, for callers that
keep deadlines (:func:`gem_core.collect_episodes`). A call under a limit never runs in the
caller's thread: it runs in a worker thread (or is awaited) so that it can be given up.

Calls left in flight: :meth:`VectorEnv.begin_step` and :meth:`VectorEnv.begin_reset` start calls
and return at once; :meth:`VectorEnv.finished` hands over each slot's row as its call finishes
(or is given up at its limit), so a slow slot holds back no other. In the async and Ray modes the
calls run meanwhile; the sync mode runs them as they begin.

A slot whose environment keeps failing can be taken out of service with :meth:`VectorEnv.quarantine`
(``collect_episodes`` does this); :attr:`VectorEnv.quarantined` reports those slots.

So a row starts an episode exactly when its info has ``episode_seed``, and ends one exactly when
``terminated or truncated``: every episode started ends once, faults included.

Seeds: slot ``i`` starts with seed ``seed + i``; each later episode of the slot uses its previous
seed plus ``num_envs``, so all episodes have distinct, reproducible seeds (and slots reset with
equal seeds stay equal, which group estimators need).
"""

from __future__ import annotations

import logging
import math
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import Any, ClassVar, Union

import numpy as np

from gem_core.core import BaseEnv, Env, require_single_agent
from gem_core.errors import GemError
from gem_core.vector.calls import Call, checked_step, close_now, close_quietly, complete, describe_error, run
from gem_core.vector.execution import INLINE
from gem_core.vector.workers import BackgroundLoop, Finished

logger = logging.getLogger("gem_core.vector")

EPISODE_SEED = "episode_seed"
FINAL_OBSERVATION = "final_observation"
FINAL_INFO = "final_info"
FAULT = "fault"

BatchStep = tuple[list[str], np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]
BatchReset = tuple[list[str], list[dict[str, Any]]]
Row = tuple[str, float, bool, bool, dict[str, Any]]
#: Seconds a call may take: one number for every slot of a call, or one per slot (None: no limit).
TimeLeft = Union[float, Sequence[Union[float, None]], None]


class AutoresetMode(str, Enum):
    """When a slot whose episode ended is reset (see the module docstring)."""

    NEXT_STEP = "next_step"
    SAME_STEP = "same_step"


class Slot:
    """One environment of a vector env: its factory, the live environment, where its calls run
    (``route``), and its autoreset state."""

    __slots__ = ("index", "env_id", "factory", "env", "route", "next_seed", "needs_reset")

    def __init__(self, index: int, env_id: str, factory: Callable[[], Env]):
        self.index, self.env_id, self.factory = index, env_id, factory
        self.env: Env | None = None
        self.route = INLINE  # where the slot's calls run; the subclass's to choose
        self.next_seed = 0
        self.needs_reset = True


class VectorEnv:
    """Runs ``len(env_fns)`` environments as one batch; see :func:`gem_core.make_vec`.

    ``env_fns`` are factories called with no arguments; each is called again to replace an
    environment that timed out or failed to reset. ``env_ids`` names the slots (default: each
    environment's spec id, or its class name). Use :class:`SyncVectorEnv` or
    :class:`AsyncVectorEnv`. Not thread-safe: one caller at a time.

    A subclass runs the calls: it implements :meth:`_route` (where a new environment's calls
    run), :meth:`_execute` and :meth:`_aexecute` (run a batch of :class:`~gem_core.vector.calls.Call`
    objects, marking those it gave up on ``timed_out``), and may override :meth:`_step_rows` for a
    cheaper step.
    """

    #: Whether slots' calls run at the same time (async) or one after another (sync).
    concurrent: ClassVar[bool] = False

    def __init__(self, env_fns: Sequence[Callable[[], Env]], *, env_ids: Sequence[str | None] | None = None,
                 seed: int | None = 0, autoreset: str | AutoresetMode = AutoresetMode.NEXT_STEP,
                 step_timeout: float | None = None):
        if isinstance(env_fns, (str, bytes)) or not isinstance(env_fns, Sequence) or not env_fns:
            raise GemError("A vector environment needs a non-empty list of environment factories.")
        if not all(callable(fn) for fn in env_fns):
            raise GemError("Every entry of env_fns must be a callable returning a gem_core.Env.")
        if env_ids is not None and len(env_ids) != len(env_fns):
            raise GemError(f"env_ids has {len(env_ids)} entries for {len(env_fns)} environments.")
        try:
            self.autoreset = AutoresetMode(autoreset)
        except ValueError:
            raise GemError(f"autoreset must be 'next_step' or 'same_step', got {autoreset!r}.") from None
        if step_timeout is not None and (isinstance(step_timeout, bool) or not isinstance(step_timeout, (int, float))
                                         or not step_timeout > 0):
            raise GemError(f"step_timeout must be a positive number of seconds or None, got {step_timeout!r}.")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise GemError(f"seed must be an integer or None, got {seed!r}.")
        self.step_timeout = None if step_timeout is None else float(step_timeout)
        self.seed = secrets.randbits(32) if seed is None else seed
        self.num_envs = len(env_fns)
        self._slots = [Slot(i, "", fn) for i, fn in enumerate(env_fns)]
        self._loop = BackgroundLoop(f"gem-vector-loop-{id(self):x}")
        self._finished: Finished[Call] = Finished()  # calls begun and done, not handed over yet
        self._in_flight: dict[int, Call] = {}
        self._reset_done = False
        self._closed = False
        #: Slots taken out of service, with what their report says (see :meth:`quarantine`).
        self.quarantined: dict[int, dict[str, Any]] = {}
        #: The episodes :func:`gem_core.collect_episodes` (``carry_over=True``) left running here,
        #: which the next collection on this vector environment continues; None when there are none.
        self.carried: Any = None
        try:
            for slot in self._slots:
                self._build(slot)
                given = env_ids[slot.index] if env_ids is not None else None
                slot.env_id = given if given is not None else _env_name(slot.env)
                slot.next_seed = self.seed + slot.index
        except BaseException:
            self.close()
            raise

    # ---- public API -------------------------------------------------------------------------

    @property
    def env_ids(self) -> list[str]:
        """The environment id of each slot."""
        return [slot.env_id for slot in self._slots]

    @property
    def envs(self) -> list[Env | None]:
        """Each slot's current environment (None while one is being replaced)."""
        return [slot.env for slot in self._slots]

    def reset(self, seed: int | Sequence[int] | None = None, indices: Sequence[int] | None = None, *,
              time_left: TimeLeft = None) -> BatchReset:
        """Reset every slot (or those in ``indices``) and return ``(observations, infos)``.

        ``seed``: None continues each slot's seed sequence (the first call uses
        ``make_vec(seed=...)``); an int ``s`` gives slot ``i`` the seed ``s + i``; a list gives
        one seed per reset slot. A slot reset mid-episode abandons that episode. ``time_left``:
        seconds each reset may take (see the module documentation).
        """
        calls = self._plan_reset(seed, indices, time_left)
        self._execute(calls)
        return self._finish_reset(calls)

    def step(self, actions: Sequence[str] | Mapping[int, str], indices: Sequence[int] | None = None, *,
             time_left: TimeLeft = None) -> BatchStep:
        """Step every slot with ``actions`` (one per slot), or only the slots in ``indices``
        (one action each, results in that order); a mapping ``{slot: action}`` also works.
        ``time_left``: seconds each slot's call may take (see the module documentation).

        Returns ``(observations, rewards, terminated, truncated, infos)``.
        """
        slots, actions = self._step_args(actions, indices)
        return _batch(self._step_rows(slots, actions, self._time_left(time_left, len(slots))))

    async def areset(self, seed: int | Sequence[int] | None = None,
                     indices: Sequence[int] | None = None, *, time_left: TimeLeft = None) -> BatchReset:
        """:meth:`reset` for async callers: native-async environments run on the caller's loop."""
        calls = self._plan_reset(seed, indices, time_left)
        await self._aexecute(calls)
        return self._finish_reset(calls)

    async def astep(self, actions: Sequence[str] | Mapping[int, str],
                    indices: Sequence[int] | None = None, *, time_left: TimeLeft = None) -> BatchStep:
        """:meth:`step` for async callers: native-async environments run on the caller's loop;
        threaded calls (blocking environments in async mode, any under a limit) are awaited
        without blocking the loop."""
        slots, actions = self._step_args(actions, indices)
        limits = self._time_left(time_left, len(slots))
        calls = [self._step_call(i, action, t) for i, action, t in zip(slots, actions, limits)]
        await self._aexecute(calls)
        return _batch([self._row(call) for call in calls])

    def begin_step(self, actions: Sequence[str] | Mapping[int, str], indices: Sequence[int] | None = None, *,
                   time_left: TimeLeft = None) -> None:
        """Start stepping slots as :meth:`step` does, and return at once; :meth:`finished` hands
        over each slot's row when its call is done. A slot with a call in flight cannot be
        stepped or reset again until then."""
        slots, actions = self._step_args(actions, indices)
        limits = self._time_left(time_left, len(slots))
        self._set_off([self._step_call(i, action, t) for i, action, t in zip(slots, actions, limits)])

    def begin_reset(self, seed: int | Sequence[int] | None = None, indices: Sequence[int] | None = None, *,
                    time_left: TimeLeft = None) -> None:
        """Start resetting slots as :meth:`reset` does, and return at once; :meth:`finished`
        hands over each slot's row (step-shaped: the first observation, reward 0, both flags
        False, the reset info with ``episode_seed``; or a ``fault``) when its reset is done."""
        self._set_off(self._plan_reset(seed, indices, time_left))

    def finished(self, timeout: float | None = None) -> list[tuple[int, Row]]:
        """``(slot, row)`` of every call begun with :meth:`begin_step` or :meth:`begin_reset`
        that is done (finished, or given up at its limit) and not handed over yet; waits up to
        ``timeout`` seconds (None: as long as it takes) for the first when none is done. Returns
        at once, empty, when no call is in flight."""
        if not self._in_flight:
            return []
        return self._hand_over(self._finished.take(timeout))

    async def afinished(self, timeout: float | None = None) -> list[tuple[int, Row]]:
        """:meth:`finished` without blocking the running event loop."""
        if not self._in_flight:
            return []
        return self._hand_over(await self._finished.atake(timeout))

    def cancel(self, indices: Sequence[int]) -> None:
        """Give up now the calls in flight of ``indices`` (slots without one are left alone), as
        if their limit had passed: their environments are closed at once and replaced, and
        :meth:`finished` never hands over their rows."""
        for index in self._indices(indices):
            call = self._in_flight.pop(index, None)
            if call is None:
                continue
            self._give_up_call(call)
            if call.timed_out:
                self._fault(call, cancelled=True)

    def retire(self, indices: Sequence[int]) -> None:
        """Close the environments of ``indices`` (idle slots: no call in flight) and replace each
        with a fresh one from its factory; a slot's next call resets it, whatever it was given.
        Used when an episode is abandoned (its deadline passed), so that nothing it started goes
        on."""
        slots = self._usable(self._indices(indices))
        self._check_idle(slots)
        for index in slots:
            slot = self._slots[index]
            if slot.env is not None:
                close_quietly(slot.env)
                slot.env = None
            slot.needs_reset = True

    @property
    def in_flight(self) -> list[int]:
        """The slots whose call (begun with :meth:`begin_step` or :meth:`begin_reset`) is not
        handed over yet."""
        return sorted(self._in_flight)

    def run_coroutine(self, coroutine: Any, timeout: float | None = None) -> Any:
        """Run a coroutine on the event loop that :meth:`step` uses for native-async
        environments (a daemon thread), and return its result."""
        self._check_open()
        return self._loop.run(coroutine, timeout)

    def quarantine(self, index: int, report: Mapping[str, Any]) -> None:
        """Take slot ``index`` out of service: close its environment and keep ``report`` (what
        failed) in :attr:`quarantined`. Resetting or stepping the slot afterwards raises
        :class:`~gem_core.GemError`."""
        slot = self._slots[self._indices([index])[0]]
        if slot.env is not None:
            close_quietly(slot.env)
            slot.env = None
        self.quarantined[slot.index] = {"slot": slot.index, "env_id": slot.env_id, **report}
        logger.warning("Slot %d (%s) is quarantined: %s", slot.index, slot.env_id,
                       report.get("reason", "its environment keeps failing"))

    @property
    def healthy_slots(self) -> list[int]:
        """The slots not quarantined."""
        return [i for i in range(self.num_envs) if i not in self.quarantined]

    def close(self) -> None:
        """Close every environment and stop the worker threads. Safe to call more than once."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        self._stop_execution()
        for slot in self._slots:
            if slot.env is not None:
                close_quietly(slot.env)
                slot.env = None
        self._loop.close()

    def __enter__(self) -> VectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self.num_envs

    def __repr__(self) -> str:
        ids = sorted(set(self.env_ids))
        shown = ", ".join(ids[:3]) + (", ..." if len(ids) > 3 else "")
        return f"<{type(self).__name__} {self.num_envs} x {shown} autoreset={self.autoreset.value}>"

    # ---- what a subclass supplies -----------------------------------------------------------

    def _route(self, env: Env) -> str:
        """Where the calls of ``env``, a slot's new environment, run (the slot's ``route``)."""
        raise NotImplementedError

    def _execute(self, calls: list[Call]) -> None:
        """Run ``calls`` (skipping finished ones) before returning."""
        raise NotImplementedError

    async def _aexecute(self, calls: list[Call]) -> None:
        """:meth:`_execute` from a coroutine."""
        raise NotImplementedError

    def _step_rows(self, slots: Sequence[int], actions: Sequence[str], time_left: Sequence[float | None]) -> list[Row]:
        """Step ``slots`` with ``actions`` (checked), each call within its ``time_left``, and
        return their rows."""
        calls = [self._step_call(i, action, t) for i, action, t in zip(slots, actions, time_left)]
        self._execute(calls)
        return [self._row(call) for call in calls]

    def _launch(self, calls: list[Call]) -> None:
        """Start ``calls`` (skipping finished ones) and hand each to ``self._finished`` when it is
        done. This default runs them before returning (the sync mode)."""
        self._execute(calls)
        for call in calls:
            self._finished.put(call)

    def _stop_execution(self) -> None:
        """Release what runs the calls (threads), as the vector environment closes."""

    def _give_up_call(self, call: Call) -> None:
        """Give up a call in flight now (:meth:`cancel`)."""
        call.give_up()

    # ---- calls left in flight -------------------------------------------------------------

    def _set_off(self, calls: list[Call]) -> None:
        for call in calls:
            self._in_flight[call.slot] = call
        finished = [call for call in calls if call.finished]  # never started (no environment, no time left)
        for call in finished:
            self._finished.put(call)
        self._launch([call for call in calls if not call.finished])

    def _hand_over(self, calls: list[Call]) -> list[tuple[int, Row]]:
        rows = []
        for call in calls:
            if self._in_flight.get(call.slot) is not call:  # a call of a slot closed or quarantined meanwhile
                continue
            del self._in_flight[call.slot]
            rows.append((call.slot, self._row(call)))
        return rows

    def _check_idle(self, slots: Sequence[int]) -> None:
        busy = [i for i in slots if i in self._in_flight]
        if busy:
            raise GemError(f"Slot {busy[0]} has a call in flight (begin_step/begin_reset); take its row with "
                           "finished() before calling it again.")

    # ---- planning ---------------------------------------------------------------------------

    def _plan_reset(self, seed: int | Sequence[int] | None, indices: Sequence[int] | None,
                    time_left: TimeLeft = None) -> list[Call]:
        self._check_open()
        slots = self._usable(self._indices(indices))
        self._check_idle(slots)
        if seed is None:
            seeds = [self._slots[i].next_seed for i in slots]
        elif isinstance(seed, int) and not isinstance(seed, bool):
            seeds = [seed + i for i in slots]
        elif isinstance(seed, Sequence) and all(isinstance(s, int) and not isinstance(s, bool) for s in seed):
            if len(seed) != len(slots):
                raise GemError(f"reset() got {len(seed)} seeds for {len(slots)} slots; give one seed per slot.")
            seeds = list(seed)
        else:
            raise GemError(f"seed must be None, an int or a list of ints, got {seed!r}.")
        limits = self._time_left(time_left, len(slots))
        calls = [self._call(i, None, s, t) for i, s, t in zip(slots, seeds, limits)]
        self._reset_done = True
        return calls

    def _step_args(self, actions: Sequence[str] | Mapping[int, str],
                   indices: Sequence[int] | None) -> tuple[Sequence[int], Sequence[str]]:
        """Checked ``(slots, actions)`` of a step."""
        self._check_open()
        if not self._reset_done:
            raise GemError("Call reset() before step() on a vector environment.")
        if isinstance(actions, Mapping):
            if indices is not None:
                raise GemError("Give either a {slot: action} mapping or actions with indices, not both.")
            indices, actions = list(actions.keys()), list(actions.values())
        if isinstance(actions, str) or not isinstance(actions, Sequence):
            raise GemError(f"actions must be a list of strings (one per slot), got {type(actions).__name__}.")
        slots = self._usable(self._indices(indices))
        self._check_idle(slots)
        if len(actions) != len(slots):
            where = f"the {len(slots)} slots in indices" if indices is not None else f"{self.num_envs} slots"
            raise GemError(f"step() got {len(actions)} actions for {where}; give one action per slot.")
        if not all(type(action) is str for action in actions):
            for i, action in zip(slots, actions):
                if not isinstance(action, str):
                    raise GemError(f"The action for slot {i} is {type(action).__name__}, not a string.")
        return slots, actions

    def _step_call(self, index: int, action: str, time_left: float | None = None) -> Call:
        """The call that steps slot ``index``: a lone reset if its episode needs one."""
        slot = self._slots[index]
        return self._call(index, None if slot.needs_reset else action, slot.next_seed, time_left)

    def _time_left(self, time_left: TimeLeft, count: int) -> list[float | None]:
        """``time_left`` as one checked limit per call."""
        if time_left is None:
            return [None] * count
        if isinstance(time_left, (int, float)) and not isinstance(time_left, bool):
            limits: list[Any] = [time_left] * count
        elif isinstance(time_left, Sequence) and not isinstance(time_left, (str, bytes)):
            if len(time_left) != count:
                raise GemError(f"time_left has {len(time_left)} entries for {count} slots; give one per slot.")
            limits = list(time_left)
        else:
            raise GemError(f"time_left must be seconds (a number, or one per slot), got {time_left!r}.")
        for limit in limits:
            if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float))
                                      or math.isnan(limit)):
                raise GemError(f"time_left must be seconds (numbers or None), got {limit!r}.")
        return [None if limit is None else float(limit) for limit in limits]

    def _step_inline(self, index: int, action: str) -> Row:
        """Step slot ``index`` in the caller's thread and return its row.

        The common case (a step within a running episode) returns the environment's result
        directly; resets, episode ends and failures go through a :class:`Call` and :meth:`_row`
        exactly as in the other execution paths.
        """
        slot = self._slots[index]
        env = slot.env
        if slot.needs_reset or env is None:
            call = self._step_call(index, action)
            if not call.finished:
                run(slot.env, call)  # type: ignore[arg-type]
            return self._row(call)
        try:
            outcome: Any = checked_step(env.step(action))
        except Exception as e:
            outcome = e
        else:
            if not (outcome[2] or outcome[3]):
                return outcome
        call = Call(index, action, slot.next_seed, self.autoreset is AutoresetMode.SAME_STEP)
        complete(env, call, outcome)
        return self._row(call)

    def _call(self, index: int, action: str | None, seed: int, time_left: float | None = None) -> Call:
        slot = self._slots[index]
        call = Call(index, action, seed, self.autoreset is AutoresetMode.SAME_STEP)
        call.bound(time.monotonic(), self.step_timeout, time_left)
        if time_left is not None and time_left <= 0:  # no time left: the call never starts
            call.timed_out = call.finished = True
            return call
        if slot.env is None:
            try:
                self._build(slot)
            except Exception as e:
                call.fail(e)
        return call

    def _indices(self, indices: Sequence[int] | None) -> list[int] | range:
        if indices is None:
            return range(self.num_envs)
        if isinstance(indices, (str, bytes)) or not isinstance(indices, Sequence):
            indices = list(indices)  # type: ignore[arg-type]
        chosen = [int(i) for i in indices if isinstance(i, (int, np.integer)) and not isinstance(i, bool)]
        if len(chosen) != len(indices) or any(not 0 <= i < self.num_envs for i in chosen):
            raise GemError(f"indices must be slot numbers from 0 to {self.num_envs - 1}, got {list(indices)!r}.")
        if len(set(chosen)) != len(chosen):
            raise GemError(f"indices must not repeat a slot, got {chosen!r}.")
        return chosen

    def _usable(self, slots: Sequence[int]) -> Sequence[int]:
        """``slots``, refusing quarantined ones."""
        if self.quarantined:
            bad = [i for i in slots if i in self.quarantined]
            if bad:
                raise GemError(f"Slot {bad[0]} ({self._slots[bad[0]].env_id}) is quarantined: "
                               f"{self.quarantined[bad[0]].get('reason', 'its environment kept failing')}. "
                               "Pass indices= naming healthy slots (vec_env.healthy_slots).")
        return slots

    def _build(self, slot: Slot) -> None:
        env = slot.factory()
        if not isinstance(env, Env):
            if isinstance(env, BaseEnv):  # a multi-agent environment
                close_quietly(env)
                require_single_agent(env, f"a vector environment (slot {slot.index})")
            raise GemError(f"The factory of slot {slot.index} returned {type(env).__name__}, not a gem_core.Env.")
        slot.env = env
        slot.route = self._route(env)

    # ---- results ----------------------------------------------------------------------------

    def _finish_reset(self, calls: list[Call]) -> BatchReset:
        observations, infos = [], []
        for call in calls:
            fault = self._fault(call)
            if fault is not None:
                observations.append("")
                infos.append({FAULT: fault})
            else:
                observation, info = self._begin(call)
                observations.append(observation)
                infos.append(info)
        return observations, infos

    def _row(self, call: Call) -> Row:
        slot = self._slots[call.slot]
        fault = self._fault(call) if call.timed_out or call.error is not None else None
        if call.action is None:  # a lone reset; the action was ignored
            if fault is not None:
                return "", 0.0, False, False, {FAULT: fault}
            observation, info = self._begin(call)
            return observation, 0.0, False, False, info
        if fault is not None and call.phase == "step":
            slot.needs_reset = True
            return "", 0.0, False, True, {FAULT: fault}
        observation, reward, terminated, truncated, info = call.step_result  # type: ignore[misc]
        if not (terminated or truncated):
            return observation, reward, terminated, truncated, info
        if self.autoreset is AutoresetMode.NEXT_STEP:
            slot.needs_reset = True
            return observation, reward, terminated, truncated, info
        final = {FINAL_OBSERVATION: observation, FINAL_INFO: info}
        if fault is not None:  # the reset after the episode failed
            return "", reward, terminated, truncated, {**final, FAULT: fault}
        new_observation, new_info = self._begin(call)
        new_info.update(final)
        return new_observation, reward, terminated, truncated, new_info

    def _begin(self, call: Call) -> tuple[str, dict[str, Any]]:
        """Account for a successful reset: the slot runs a new episode."""
        slot = self._slots[call.slot]
        observation, info = call.reset_result  # type: ignore[misc]
        info = dict(info)
        info[EPISODE_SEED] = call.seed
        slot.next_seed = call.seed + self.num_envs  # type: ignore[operator]
        slot.needs_reset = False
        return observation, info

    def _fault(self, call: Call, cancelled: bool = False) -> dict[str, Any] | None:
        """The fault report of a failed call (None if it succeeded); replaces the environment
        when it cannot be trusted any more. ``cancelled``: the call was given up by
        :meth:`cancel`, not at its limit."""
        if not call.timed_out and call.error is None:
            return None
        slot = self._slots[call.slot]
        slot.needs_reset = True
        if call.timed_out:
            fault: dict[str, Any] = {"kind": call.limit or "timeout", "phase": call.phase}
            fault["timeout_s" if fault["kind"] == "timeout" else "deadline_s"] = call.limit_s
            env, slot.env = slot.env, None
            if env is not None and not call.env_closed:
                (close_now if call.left_running else close_quietly)(env)
            if cancelled:  # its caller no longer needs it (a spare, a collection that ended)
                logger.info("Slot %d (%s): its %s was cancelled; the environment is replaced.",
                            slot.index, slot.env_id, call.phase)
            else:
                logger.warning("Slot %d (%s): %s ran past its %s (%.3g s); its episode ends and the "
                               "environment is replaced.", slot.index, slot.env_id, call.phase,
                               "step_timeout" if fault["kind"] == "timeout" else "deadline", call.limit_s or 0.0)
        else:
            error, trace = describe_error(call.error)  # type: ignore[arg-type]
            kind = getattr(call.error, "failure_kind", "error")
            fault = {"kind": kind, "phase": call.phase, "error": error, "traceback": trace}
            logger.warning("Slot %d (%s): %s raised %s", slot.index, slot.env_id, call.phase, error)
            if call.phase == "reset" and slot.env is not None:
                close_quietly(slot.env)
                slot.env = None
        if call.phase == "reset":
            fault["seed"] = call.seed
            slot.next_seed = call.seed + self.num_envs  # type: ignore[operator]  # the retry gets a fresh seed
        return fault

    def _check_open(self) -> None:
        if self._closed:
            raise GemError("This vector environment is closed.")


def _batch(rows: list[Row]) -> BatchStep:
    if not rows:
        return [], np.zeros(0), np.zeros(0, dtype=np.bool_), np.zeros(0, dtype=np.bool_), []
    observations, rewards, terminated, truncated, infos = zip(*rows)
    return (list(observations), np.array(rewards, dtype=np.float64), np.array(terminated, dtype=np.bool_),
            np.array(truncated, dtype=np.bool_), list(infos))


def _env_name(env: Env | None) -> str:
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None else type(env.unwrapped if env is not None else env).__name__

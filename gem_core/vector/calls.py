"""One slot's share of a vector step: a ``step`` (and, under same-step autoreset, the ``reset``
after a terminal step) or a lone ``reset``, run on the slot's environment.

The functions here never raise for what an environment does: its exceptions and malformed
results are stored on the :class:`Call` and become a fault report in the slot's info.
"""

from __future__ import annotations

import logging
import math
import threading
import traceback
from typing import Any

from gem_core.core import Env, ResetResult, StepResult
from gem_core.errors import MalformedResultError
from gem_core.vector.starts import gate_for

logger = logging.getLogger("gem_core.vector")


class Call:
    """What to run on one slot, and what came back.

    ``phase`` is the call in progress ("step" or "reset"): after a timeout it says which one hung.
    ``deadline`` (a :func:`time.monotonic` time, or None) is when the call is given up, ``limit``
    which limit that is (``"timeout"``: ``step_timeout``; ``"deadline"``: its episode's or its
    collection's deadline) and ``limit_s`` its length in seconds. ``timed_out`` is set by the
    executor that gave up on the call; ``env_closed`` when that executor closed its environment
    at once.
    """

    __slots__ = ("slot", "action", "seed", "reset_after_end", "phase", "step_result", "reset_result",
                 "error", "finished", "timed_out", "deadline", "limit", "limit_s", "route", "env_closed",
                 "task", "_settled_by")

    def __init__(self, slot: int, action: str | None, seed: int | None, reset_after_end: bool):
        self.slot = slot
        self.action = action  # None: a lone reset
        self.seed = seed
        self.reset_after_end = reset_after_end
        self.phase = "reset" if action is None else "step"
        self.step_result: StepResult | None = None
        self.reset_result: ResetResult | None = None
        self.error: BaseException | None = None
        self.finished = False
        self.timed_out = False
        self.deadline: float | None = None
        self.limit: str | None = None
        self.limit_s: float | None = None
        self.route = ""  # where the call runs (see gem_core.vector.execution)
        self.env_closed = False
        self.task: Any = None  # an awaited call's future, to cancel it
        self._settled_by: list[str] = []

    def bound(self, now: float, step_timeout: float | None, time_left: float | None) -> None:
        """Give the call the nearer of ``step_timeout`` and ``time_left`` (seconds from ``now``)."""
        if step_timeout is not None and (time_left is None or step_timeout <= time_left):
            self.deadline, self.limit, self.limit_s = now + step_timeout, "timeout", step_timeout
        elif time_left is not None:
            self.deadline, self.limit, self.limit_s = now + time_left, "deadline", time_left

    def settle(self, by: str) -> bool:
        """Decide, once and for all threads, who settles a threaded call: the worker that
        finished it or the waiter that gave up on it. True for the first caller only."""
        self._settled_by.append(by)  # atomic: the first entry wins
        return self._settled_by[0] == by

    def give_up(self) -> bool:
        """Give up on the call (its limit passed), unless a worker finished it first; True when
        this caller gave up on it."""
        if not self.settle("waiter"):
            return False
        self.timed_out = True
        return True

    @property
    def settled(self) -> bool:
        """Whether a worker finished the call or a waiter gave up on it."""
        return bool(self._settled_by)

    @property
    def left_running(self) -> bool:
        """Whether the waiter gave up on this call while a worker thread still runs it (that
        thread closes the environment when the call returns)."""
        return bool(self._settled_by) and self._settled_by[0] == "waiter"

    def fail(self, error: BaseException) -> None:
        """Record an error raised outside the environment's methods (e.g. building it)."""
        self.error = error
        self.finished = True

    @property
    def ends_episode(self) -> bool:
        result = self.step_result
        return result is not None and (result[2] or result[3])


def run(env: Env, call: Call) -> None:
    """Run ``call`` on ``env`` synchronously."""
    try:
        if call.action is not None:
            call.step_result = checked_step(env.step(call.action))
            if not (call.reset_after_end and call.ends_episode):
                return
            call.phase = "reset"
        _reset(env, call)
    except Exception as e:
        call.error = e
    finally:
        call.finished = True


def _reset(env: Env, call: Call) -> None:
    """Reset ``env`` for ``call``, through the gate of its start limit if it declares one (a call
    given up while held there never starts)."""
    gate = gate_for(getattr(env, "start_limit", None))
    if gate is None:
        call.reset_result = checked_reset(env.reset(seed=call.seed))
        return
    if not gate.enter(lambda: call.left_running):
        return
    try:
        call.reset_result = checked_reset(env.reset(seed=call.seed))
    finally:
        gate.leave()


async def _areset(env: Env, call: Call) -> None:
    gate = gate_for(getattr(env, "start_limit", None))
    if gate is None:
        call.reset_result = checked_reset(await env.areset(seed=call.seed))
        return
    await gate.aenter()
    try:
        call.reset_result = checked_reset(await env.areset(seed=call.seed))
    finally:
        gate.leave()


def complete(env: Env, call: Call, outcome: StepResult | Exception) -> None:
    """Complete a call whose step already ran (``outcome`` is its checked result or the
    exception it raised): run the reset due after an episode's end, if any."""
    if isinstance(outcome, Exception):
        call.error = outcome
    else:
        call.step_result = outcome
        if call.reset_after_end and call.ends_episode:
            call.phase = "reset"
            try:
                _reset(env, call)
            except Exception as e:
                call.error = e
    call.finished = True


async def arun(env: Env, call: Call) -> None:
    """Run ``call`` on ``env`` through its native-async methods (cancellation propagates)."""
    try:
        if call.action is not None:
            call.step_result = checked_step(await env.astep(call.action))
            if not (call.reset_after_end and call.ends_episode):
                call.finished = True
                return
            call.phase = "reset"
        await _areset(env, call)
    except Exception as e:
        call.error = e
    call.finished = True


def checked_step(result: Any) -> StepResult:
    """``result`` as a well-formed step result, or :class:`~gem_core.errors.MalformedResultError`
    (a TypeError) describing what is wrong; a reward must be a finite number."""
    try:
        observation, reward, terminated, truncated, info = result
    except (TypeError, ValueError):
        raise MalformedResultError("step() must return (observation, reward, terminated, truncated, info), "
                        f"got {_short(result)}") from None
    if not isinstance(observation, str):
        raise MalformedResultError(f"step() returned an observation of type {type(observation).__name__}, not str")
    if not isinstance(info, dict):
        raise MalformedResultError(f"step() returned info of type {type(info).__name__}, not dict")
    try:
        reward = float(reward)
    except (TypeError, ValueError):
        raise MalformedResultError(f"step() returned a reward that is not a number: {_short(reward)}") from None
    if not math.isfinite(reward):
        raise MalformedResultError(f"step() returned a reward of {reward}: every reward must be a finite number")
    return observation, reward, bool(terminated), bool(truncated), info


def checked_reset(result: Any) -> ResetResult:
    """``result`` as a well-formed reset result, or :class:`~gem_core.errors.MalformedResultError`
    (a TypeError) describing what is wrong."""
    try:
        observation, info = result
    except (TypeError, ValueError):
        raise MalformedResultError(f"reset() must return (observation, info), got {_short(result)}") from None
    if not isinstance(observation, str):
        raise MalformedResultError(f"reset() returned an observation of type {type(observation).__name__}, not str")
    if not isinstance(info, dict):
        raise MalformedResultError(f"reset() returned info of type {type(info).__name__}, not dict")
    return observation, info


def describe_error(error: BaseException) -> tuple[str, str]:
    """``("Type: message", formatted traceback)`` for a fault report."""
    return f"{type(error).__name__}: {error}", "".join(traceback.format_exception(error))


def close_quietly(env: Env) -> None:
    """Close ``env``, logging (not raising) what its ``close`` raises."""
    try:
        env.close()
    except Exception as e:
        logger.warning("Closing %r raised %s: %s", env, type(e).__name__, e)


def close_now(env: Env) -> None:
    """Begin closing ``env`` at once, in a thread of its own, while a call of its may still be
    running (so that its sandboxes and processes end now); returns without waiting."""
    threading.Thread(target=close_quietly, args=(env,), name="gem-vector-close", daemon=True).start()


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."

"""One slot's share of a vector step: a ``step`` (and, under same-step autoreset, the ``reset``
after a terminal step) or a lone ``reset``, run on the slot's environment.

The functions here never raise for what an environment does: its exceptions and malformed
results are stored on the :class:`Call` and become a fault report in the slot's info.
"""

from __future__ import annotations

import logging
import math
import traceback
from typing import Any

from gem_core.core import Env, ResetResult, StepResult
from gem_core.errors import MalformedResultError

logger = logging.getLogger("gem_core.vector")


class Call:
    """What to run on one slot, and what came back.

    ``phase`` is the call in progress ("step" or "reset"): after a timeout it says which one hung.
    ``timed_out`` is set by the executor that gave up waiting.
    """

    __slots__ = ("slot", "action", "seed", "reset_after_end", "phase", "step_result", "reset_result",
                 "error", "finished", "timed_out", "_settled_by")

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
        self._settled_by: list[str] = []

    def settle(self, by: str) -> bool:
        """Decide, once and for all threads, who settles a threaded call: the worker that
        finished it or the waiter that gave up on it. True for the first caller only."""
        self._settled_by.append(by)  # atomic: the first entry wins
        return self._settled_by[0] == by

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
        call.reset_result = checked_reset(env.reset(seed=call.seed))
    except Exception as e:
        call.error = e
    finally:
        call.finished = True


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
                call.reset_result = checked_reset(env.reset(seed=call.seed))
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
        call.reset_result = checked_reset(await env.areset(seed=call.seed))
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


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."

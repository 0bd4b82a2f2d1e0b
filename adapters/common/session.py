"""One GEM episode driven by text, for training libraries that generate the model's turns.

The library's rollout code owns generation and tokens; a session owns the environment: it makes it
with the configured wrappers, resets it with the row's seed, steps it with each decoded answer, and
says when and why the episode stopped. Observations come as the agent should see them: with the
board or reminder an environment puts in ``info["suffix"]`` while the episode goes on (see
:func:`gem_core.wrappers.observation.as_seen`), since the library's conversation holds only what
the session returns.

An environment is user code and may fail. A reset that raises is retried with other seeds; when
every attempt fails, or a step raises or returns something that is not a transition (a reward that
is not a finite number, ...), or the environment's sandbox dies, the episode **fails**:
:attr:`EnvSession.failure` holds a :class:`gem_core.episodes.Failure` of the core's kinds
(``error``, ``malformed``, ``sandbox``, ``host_lost``, ``deadline``, ...), the stop reason is
``failed``, the failure is logged with the environment id, seed and turn, and the environment is
closed at once (what it runs dies with it); the session's next reset makes a fresh one. A failed
episode teaches nothing: every adapter gives its tokens zero loss weight and leaves it out of GEM's
estimator statistics. The batch goes on; no rollout worker crashes because one environment did.

With ``episode_deadline`` in the options, an episode's wall clock is bounded from its reset on,
environment and sampling time together. An environment call still running at the deadline is
abandoned (and its environment closed); a library's generation awaited through
:meth:`EnvSession.within_deadline` is cancelled; where the library generates on its own and calls
``step`` in between, a step asked for after the deadline ends the episode instead. Either way the
episode fails with kind ``deadline``.

With ``env_pool`` in the options, the environment runs on a slot of that Ray pool instead of in
this process (:class:`gem_core.vector.ray_slot.RaySlotEnv`): a rollout worker on a GPU node then
does no environment work, and an episode whose host is lost goes on, played again there from its
seed and actions.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gem_adapters.common.options import EpisodeOptions
from gem_core import Env, make
from gem_core.episodes import FAILURE_KINDS, Failure, last_turn_success
from gem_core.images import images_of
from gem_core.registry import apply_wrappers
from gem_core.vector.calls import checked_reset, checked_step
from gem_core.wrappers.observation import as_seen

logger = logging.getLogger("gem_adapters")
T = TypeVar("T")

FAILED = "failed"
#: Why an episode stopped: the environment ended it (terminated, truncated), the turn limit, or the
#: episode failed (see :attr:`EnvSession.failure`). Library adapters add their own (token budgets).
STOP_REASONS = ("terminated", "truncated", "max_turns", FAILED)
RESET_ATTEMPTS = 3
RESEED_STRIDE = 1_000_003  # seeds tried after a failed reset: seed + k * stride


@dataclass(frozen=True)
class StepOutcome:
    """What one answer brought: the next observation, the turn's reward, and whether the episode
    is over (``stop`` names why; None while it goes on)."""

    observation: str
    reward: float
    stop: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.stop is not None


def failure_kind(error: BaseException) -> str:
    """The failure kind of what an environment raised: its own
    (:class:`~gem_core.errors.EnvironmentFailure`'s ``failure_kind``, or the kind a pool host
    reported), else ``"error"``."""
    fault = getattr(error, "fault", None)
    kind = fault.get("kind") if isinstance(fault, Mapping) else getattr(error, "failure_kind", None)
    return kind if kind in FAILURE_KINDS else "error"


def failure_metrics(failure: Failure | None) -> dict[str, float]:
    """``failed`` (1.0 or 0.0) and ``failed_<kind>`` for every failure kind: the same keys for every
    episode, so that a library's per-episode metrics line up across a batch, where their means are
    the shares of failed episodes, in all and by kind."""
    kind = None if failure is None else failure.kind
    return {"failed": float(kind is not None), **{f"failed_{k}": float(k == kind) for k in FAILURE_KINDS}}


async def call_env(env: Env, method: str, *args: Any, bounded: bool = False) -> Any:
    """``env.reset``/``env.step``, as GEM's vector environments route calls: native-async methods
    are awaited, environments that block on I/O run in a thread so the other episodes on this
    event loop keep going, and cheap synchronous ones run inline, unless the call is ``bounded``
    (by a deadline), which only a thread lets the caller abandon."""
    from gem_core.vector.execution import AWAIT, THREAD, execution_kind

    kind = execution_kind(env)
    if kind == AWAIT:
        return await getattr(env, "a" + method)(*args)
    if kind == THREAD or bounded:
        return await in_thread(getattr(env, method), *args)
    return getattr(env, method)(*args)


async def in_thread(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` in a daemon thread of its own, awaited. A call that never returns then
    keeps neither this event loop (when the awaiting task is cancelled) nor the process (at exit)
    waiting, as a pooled executor's thread would (``asyncio.run`` joins the default one)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():  # the waiter gave up
            return
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)

    def work() -> None:
        try:
            result, error = function(*args), None
        except BaseException as e:  # noqa: BLE001 - handed to the waiter
            result, error = None, e
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop closed meanwhile: nobody waits any more
            pass

    threading.Thread(target=work, name=f"gem-env-{getattr(function, '__name__', 'call')}", daemon=True).start()
    return await future


class _DeadlinePassed(Exception):
    """The episode's deadline passed before (``phase`` "policy") or during an environment call."""

    def __init__(self, phase: str):
        super().__init__(phase)
        self.phase = phase


class EnvSession:
    """One episode of one environment at a time; see the module documentation. ``factory`` makes
    a fresh environment after a failure closed this one (:meth:`start` gives one); without it the
    reset after a failure fails too."""

    def __init__(self, env: Env, env_id: str, seed: int | None, options: EpisodeOptions, *,
                 factory: Callable[[], Env] | None = None):
        self.env, self.env_id, self.seed, self.options = env, env_id, seed, options
        self.factory = factory
        self.rewards: list[float] = []
        self.last_info: dict[str, Any] = {}  # the info of the latest step
        self.stop: str | None = None
        #: Why the infrastructure failed the episode (None while it did not); see the module docs.
        self.failure: Failure | None = None
        #: The images of the latest observation (a visual task's ``info["images"]``, one per
        #: ``<image>`` placeholder in its text; see :mod:`gem_core.images`).
        self.images: list[Any] = []
        self._deadline_at: float | None = None
        self._clock_held = False  # within_deadline started the clock for the reset inside it
        self._calling: str | None = None  # the environment call in progress
        self._env_closed = False

    @classmethod
    def start(cls, env_id: str, seed: int | None, options: EpisodeOptions | None = None,
              **env_kwargs: Any) -> EnvSession:
        """Make ``env_id`` (``env_kwargs`` override its constructor defaults) with
        ``options.wrappers`` (on ``options.env_pool`` when set). An unknown id, keyword or
        wrapper is a configuration mistake and raises :class:`~gem_core.GemError` here, before
        any episode is played."""
        options = options or EpisodeOptions()

        def factory() -> Env:
            if options.env_pool is not None:
                from gem_core.vector.ray_slot import RaySlotEnv

                return RaySlotEnv(env_id, pool=options.env_pool, wrappers=list(options.wrappers) or None,
                                  **env_kwargs)
            env = make(env_id, **env_kwargs)
            try:
                return apply_wrappers(env, options.wrappers)
            except BaseException:
                env.close()
                raise

        return cls(factory(), env_id, seed, options, factory=factory)

    @property
    def turns(self) -> int:
        return len(self.rewards)

    @property
    def error(self) -> str | None:
        """What failed, when the episode failed."""
        return None if self.failure is None else self.failure.error

    def time_left(self) -> float | None:
        """Seconds until the running episode's deadline (negative once it passed); None without
        a deadline."""
        return None if self._deadline_at is None else self._deadline_at - time.monotonic()

    async def within_deadline(self, episode: Awaitable[T]) -> T | None:
        """Await ``episode`` (a library's play of this session's episode: its reset, steps and
        generations) under the episode deadline, whose clock starts now. Past the deadline it is
        cancelled, the episode fails (kind ``deadline``, in the phase that was running) and None
        comes back; the caller then makes the library's output of a failed episode."""
        deadline = self.options.episode_deadline
        if deadline is None:
            return await episode
        self._deadline_at, self._clock_held = time.monotonic() + deadline, True
        try:
            return await asyncio.wait_for(episode, deadline)
        except TimeoutError:
            if time.monotonic() < self._deadline_at:
                raise  # raised inside the episode, not the deadline
            self._fail("deadline", self._past_deadline(), self._calling or "policy")
            return None
        finally:
            self._clock_held, self._calling = False, None

    async def reset(self) -> str:
        """Start an episode (with ``self.seed``) and return its first observation; a session may
        play several episodes one after the other. A reset that raises is retried with other
        seeds (logged); if every attempt fails, the episode fails and the observation says so
        (the first step then ends it)."""
        self.rewards, self.last_info, self.stop, self.failure, self.images = [], {}, None, None, []
        self._calling = None
        deadline = self.options.episode_deadline
        if not self._clock_held:
            self._deadline_at = None if deadline is None else time.monotonic() + deadline
        if self._env_closed and not self._replace_env():
            return self._failed_start()
        error: BaseException | None = None
        for attempt in range(RESET_ATTEMPTS):
            seed = self.seed if self.seed is None or attempt == 0 else self.seed + attempt * RESEED_STRIDE
            try:
                observation, info = checked_reset(await self._call("reset", seed))
            except _DeadlinePassed as passed:
                self._fail("deadline", self._past_deadline(), passed.phase)
                return self._failed_start()
            except Exception as e:  # noqa: BLE001 - environment code may raise anything
                error = e
                logger.warning("Environment %s failed to reset with seed %s (attempt %d of %d): %s",
                               self.env_id, seed, attempt + 1, RESET_ATTEMPTS, describe(e))
                continue
            self.images = images_of(info)
            return as_seen(observation, info)
        assert error is not None
        self._fail(failure_kind(error), describe(error), "reset")
        return self._failed_start()

    async def step(self, action: str) -> StepOutcome:
        """Step with the model's answer; never raises for the environment's failures."""
        if self.stop is not None:  # the reset failed, or the episode is over
            self.rewards.append(0.0)
            return StepOutcome("", 0.0, self.stop)
        try:
            observation, reward, terminated, truncated, info = checked_step(await self._call("step", action))
        except _DeadlinePassed as passed:
            self._fail("deadline", self._past_deadline(), passed.phase)
            return self._failed_step()
        except Exception as error:  # noqa: BLE001
            self._fail(failure_kind(error), describe(error), "step")
            return self._failed_step()
        self.rewards.append(reward)
        self.images, self.last_info = images_of(info), info
        if terminated or truncated:
            self.stop = "terminated" if terminated else "truncated"
        elif self.turns == self.options.max_turns:
            self.stop = "max_turns"
        return StepOutcome(as_seen(observation, info, done=self.stop is not None), reward, self.stop, info)

    @property
    def terminated(self) -> bool:
        """True only when the environment itself ended the episode (not a limit or a failure)."""
        return self.stop == "terminated"

    @property
    def success(self) -> bool:
        """Whether the episode so far was won, as `gem train` counts it
        (:func:`gem_core.episodes.last_turn_success` of the latest step)."""
        return bool(self.rewards) and last_turn_success(self.last_info, self.rewards[-1])

    def metrics(self) -> dict[str, float]:
        """The episode in numbers, as the adapters hand them to their library's logger: ``turns``,
        ``terminated`` (the environment ended it), ``success`` (won) and ``format_error`` (its last
        turn was one), each counted as `gem train` counts them, then ``failed`` and
        ``failed_<kind>`` (:func:`failure_metrics`)."""
        return {"turns": float(self.turns), "terminated": float(self.terminated), "success": float(self.success),
                "format_error": float(bool(self.last_info.get("format_error"))), **failure_metrics(self.failure)}

    def close(self) -> None:
        """Close the environment (once; a failure closed it already)."""
        if self._env_closed:
            return
        self._env_closed = True
        try:
            self.env.close()
        except Exception:  # noqa: BLE001
            logger.exception("Environment %s failed to close", self.env_id)

    def __enter__(self) -> EnvSession:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- failures ----------------------------------------------------------------------------

    async def _call(self, method: str, *args: Any) -> Any:
        """An environment call, bounded by the episode deadline when there is one."""
        left = self.time_left()
        if left is not None and left <= 0:
            raise _DeadlinePassed("policy")  # the time went on the library's side
        self._calling = method
        try:
            if left is None:
                result = await call_env(self.env, method, *args)
            else:
                result = await asyncio.wait_for(call_env(self.env, method, *args, bounded=True), left)
        except asyncio.CancelledError:
            raise  # _calling stays set: the deadline that cancelled the call names its phase
        except TimeoutError:
            self._calling = None
            if left is None or time.monotonic() < self._deadline_at:  # type: ignore[operator]
                raise  # the environment's own
            raise _DeadlinePassed(method) from None
        except BaseException:
            self._calling = None
            raise
        self._calling = None
        return result

    def _fail(self, kind: str, error: str, phase: str) -> None:
        """Record the failure (the first one stays), end the episode and close the environment."""
        if self.failure is None:
            self.failure = Failure(kind, error, phase, self.turns)
            where = "at its start" if phase == "reset" else f"at turn {self.turns + (phase == 'step')}"
            logger.error("Environment %s (seed %s) failed %s (%s, in %s): %s. The episode fails and is left "
                         "out of training.", self.env_id, self.seed, where, kind, phase, error)
        self.stop, self.images, self.last_info = FAILED, [], {}
        self.close()  # now, so that what it runs (a sandbox, a container) dies with it

    def _replace_env(self) -> bool:
        """A fresh environment in place of the closed one; False (the episode failed) if none."""
        if self.factory is None:
            self._fail("error", "the environment was closed after a failure, and this session cannot make "
                       "another (start sessions with EnvSession.start)", "reset")
            return False
        try:
            self.env = self.factory()
        except Exception as error:  # noqa: BLE001
            self._fail(failure_kind(error), describe(error), "reset")
            return False
        self._env_closed = False
        return True

    def _past_deadline(self) -> str:
        return f"the episode ran past its deadline of {self.options.episode_deadline:g} s"

    def _failed_start(self) -> str:
        return f"The environment failed to start ({self.error})."

    def _failed_step(self) -> StepOutcome:
        self.rewards.append(0.0)  # the turn was played; its reward is never read
        return StepOutcome(f"The environment failed ({self.error}).", 0.0, FAILED)


def describe(error: BaseException) -> str:
    """``"Type: message"`` of an exception, for failure records and logs."""
    return f"{type(error).__name__}: {error}"

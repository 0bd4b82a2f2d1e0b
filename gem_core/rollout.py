"""Collect complete episodes from a vector environment with any policy.

A policy is any callable that takes a list of observations and returns a list of actions (one
string each), or an awaitable of that list: an LLM client, a sampler, a scripted agent. A policy
with an ``infos`` keyword gets each observation's info too (e.g. the images of a visual task,
``info["images"]``), and one with an ``episodes`` keyword the :class:`~gem_core.episodes.Episode`
each observation belongs to (its env id, seed and turns so far; the same object from the episode's
first turn to its last, and the one ``on_episode`` gets). A policy with a ``stream_actions``
method (taking the observations, and ``infos`` and ``episodes`` as the call does) may hand its
actions over as they are ready, as ``(positions, actions)`` pairs (positions into the
observations, each once): :func:`collect_episodes` steps those slots at once, while the policy
works on the others (a model sampling on a GPU, say); the episodes are the ones the plain call
gives.

Seeds: an int ``s`` gives the first slots the seeds ``s``, ``s + 1``, ... and each slot then
continues its own sequence (see :mod:`gem_core.vector.base`); a list gives the episodes' seeds in
the order they start, whichever slot starts them (several entries may be equal: episodes from one
start state), so the same list plays the same episodes whatever the timing. A failed start's seed
is not tried again: the next seed of the list takes its place. When the list runs out, the slots
continue their own sequences.

Exactly ``num_episodes`` episodes are started and each is collected when it ends, so no episode
is cut off or dropped (which would bias a batch towards short episodes): slots whose episode
ended sit idle once enough episodes have started. The slots used are reset at the start.

A flaky environment never stops a collection. A failed reset is retried with the slot's next
seed after a short backoff (``reset_backoff`` seconds, doubling with each failure in a row); a
slot that fails ``max_reset_failures`` resets in a row is quarantined (closed, reported in
``vec_env.quarantined`` with its env id, seeds and errors, and left out of this and later
collections), and the others go on. Collection raises :class:`~gem_core.GemError` only when no
healthy slot remains, or when more than ``max_reset_failure_share`` of the resets attempted
(once at least ten were) failed. A step that fails ends its episode truncated (see
:mod:`gem_core.vector.base`).

An episode lost with its host (a fault of kind ``"host_lost"``, in the Ray mode) is played again
from its seed on a live host (``replay_lost=True``, the default), so every episode is returned
once and complete; with ``replay_lost=False`` it is returned truncated, like other faults. A reset
lost with its host is retried and counts as no reset failure.

An episode whose environment failed (a step that raised, returned something malformed or timed
out, a host lost without replay) ends with :attr:`~gem_core.episodes.Episode.failure` set: its
outcome is ``"failed"``, and estimators and trainers leave it out. Its last turn holds the action
the failed step was given, with reward 0.

Deadlines. ``episode_deadline`` gives each episode that many seconds of wall clock, from the
request of its reset, environment and sampling time together; ``deadline`` gives the whole
collection that many. An episode past its deadline ends failed (kind ``"deadline"``): a call of
its environment still running then is given up (the environment closed at once, so that what it
started ends, and replaced from its factory), and an episode waiting for the policy then has its
environment closed and replaced too. At the collection's deadline the collection returns the
episodes that ended, and those still running end failed the same way (a policy that is an
awaitable is cancelled then; a synchronous one runs in the caller's thread and cannot be
interrupted: the deadline applies when it returns). With a deadline, a collection may return
fewer than ``num_episodes`` episodes. A deadline may not be shorter than the vector environment's
``step_timeout``.

With a deadline, a concurrent vector environment (the async and Ray modes) lets each slot go at
its own pace: a slot whose call is slow or hung holds back no other. The policy is asked for the
observations that are ready once they are at least as many as the calls still running, or once
the first of them has waited as long as the last policy call took (so batches stay large, and a
straggler delays the others by one policy call at most). The episodes are the same; the batches
the policy sees depend on the timing.

Carry-over (``carry_over=True``). The episodes still running at the collection's deadline stay
with the vector environment (``vec_env.carried``), calls in flight included, and continue in the
next collection on it, before it starts new ones; each episode is returned exactly once, by the
collection in which it ends, and counts towards that collection's ``num_episodes``. An episode's
clock stops between collections (its call in flight keeps its own deadline).
``policy_version`` (an int the caller passes, e.g. its optimiser step) is recorded on every turn
(:attr:`~gem_core.episodes.Turn.policy_version`), so a trainer sees which policy sampled each
turn of a carried episode. In the sync mode a call running at the deadline cannot be left running
(the mode runs calls one after another in the caller's thread): its episode ends failed, and only
the episodes between calls carry over.

Spares (``spares=k``): start ``k`` episodes more than ``num_episodes`` and return the first
``num_episodes`` that end; the others are dropped and their environments reset (with
``carry_over``, they carry over instead). Keeping the first to end favours short episodes, as a
deadline does (see the documentation's figure). With ``group_size=g`` the episodes come in groups
of ``g`` that share an environment id and a seed (as ``gem train`` deals them, for estimators that
compare a group's members): spares then keep the first whole groups to end, so that no group is
returned split (an episode that failed counts as ended: its group is whole without it).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Generator, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Union

from gem_core.episodes import Episode, Failure, Turn
from gem_core.errors import GemError

logger = logging.getLogger("gem_core.rollout")

#: Defaults of the reset-fault policy (see the module documentation).
MAX_RESET_FAILURES = 3
RESET_BACKOFF = 0.05
MAX_RESET_FAILURE_SHARE = 0.5
MIN_RESETS_FOR_SHARE = 10

Policy = Callable[[list[str]], Union[Sequence[str], Awaitable[Sequence[str]]]]

#: What the drivers answer a policy request with when the collection's deadline passed first.
_TIMED_OUT = object()


def collect_episodes(vec_env: Any, policy: Policy, num_episodes: int, *, seed: int | Sequence[int] | None = None,
                     max_turns: int | None = None, episode_deadline: float | None = None,
                     deadline: float | None = None, carry_over: bool = False, spares: int = 0,
                     group_size: int = 1, policy_version: int | None = None,
                     max_reset_failures: int = MAX_RESET_FAILURES,
                     reset_backoff: float = RESET_BACKOFF,
                     max_reset_failure_share: float = MAX_RESET_FAILURE_SHARE,
                     progress: bool = False, on_episode: Callable[[Episode], Any] | None = None,
                     replay_lost: bool = True) -> list[Episode]:
    """Run ``policy`` on ``vec_env`` until ``num_episodes`` episodes have ended; return them in
    the order they started.

    ``policy`` may be synchronous or ``async`` (its coroutines run on the vector environment's
    event loop); from a coroutine, use :func:`acollect_episodes`. ``seed``: an int for the first
    reset, or the list of the episodes' seeds (see the module documentation). ``max_turns`` cuts
    an episode off (its last turn marked truncated) after that many turns. ``episode_deadline``
    and ``deadline`` (seconds) bound each episode and the whole collection; ``carry_over`` keeps
    the episodes still running at the deadline for the next collection; ``spares`` starts that
    many more episodes and keeps the first to end (the first whole groups of ``group_size``
    episodes sharing an environment id and a seed); ``policy_version`` is recorded on every turn
    (see the module documentation). Failed resets are retried, and slots that keep failing are
    quarantined, as the module documentation says (``max_reset_failures``, ``reset_backoff``,
    ``max_reset_failure_share``). ``progress`` shows a progress bar. ``on_episode`` is called with
    each episode as it ends (to save or count it before the collection is over).
    """
    settings = _Settings(num_episodes, seed, max_turns, episode_deadline, deadline, carry_over, spares, group_size,
                         policy_version, _ResetPolicy(max_reset_failures, reset_backoff, max_reset_failure_share),
                         progress, on_episode, replay_lost)
    streaming = callable(getattr(policy, "stream_actions", None))
    accepted = _accepted(policy.stream_actions if streaming else policy)
    steps = _collect(vec_env, settings, streaming=streaming)
    result: Any = None
    try:
        while True:
            kind, payload = steps.send(result)
            if kind == "reset":
                seeds, indices, time_left = payload
                result = vec_env.reset(seeds, indices, **_limited(time_left))
            elif kind == "step":
                actions, indices, time_left = payload
                result = vec_env.step(actions, indices, **_limited(time_left))
            elif kind == "finished":
                result = vec_env.finished(payload)
            elif kind == "act":
                result = _act_streaming(vec_env, policy, accepted, *payload)
            elif kind == "sleep":
                time.sleep(payload)
                result = None
            else:
                asked, timeout = payload
                result = _ask(policy, accepted, *asked)
                if inspect.isawaitable(result):
                    result = _bounded(vec_env, result, timeout)
    except StopIteration as stop:
        return stop.value


async def acollect_episodes(vec_env: Any, policy: Policy, num_episodes: int, *,
                            seed: int | Sequence[int] | None = None, max_turns: int | None = None,
                            episode_deadline: float | None = None, deadline: float | None = None,
                            carry_over: bool = False, spares: int = 0, group_size: int = 1,
                            policy_version: int | None = None,
                            max_reset_failures: int = MAX_RESET_FAILURES, reset_backoff: float = RESET_BACKOFF,
                            max_reset_failure_share: float = MAX_RESET_FAILURE_SHARE,
                            progress: bool = False,
                            on_episode: Callable[[Episode], Any] | None = None,
                            replay_lost: bool = True) -> list[Episode]:
    """:func:`collect_episodes` for async callers: awaits the policy and the vector
    environment's ``areset``/``astep`` (or its calls in flight) on the running loop."""
    settings = _Settings(num_episodes, seed, max_turns, episode_deadline, deadline, carry_over, spares, group_size,
                         policy_version, _ResetPolicy(max_reset_failures, reset_backoff, max_reset_failure_share),
                         progress, on_episode, replay_lost)
    steps = _collect(vec_env, settings)
    accepted = _accepted(policy)
    result: Any = None
    try:
        while True:
            kind, payload = steps.send(result)
            if kind == "reset":
                seeds, indices, time_left = payload
                result = await vec_env.areset(seeds, indices, **_limited(time_left))
            elif kind == "step":
                actions, indices, time_left = payload
                result = await vec_env.astep(actions, indices, **_limited(time_left))
            elif kind == "finished":
                result = await vec_env.afinished(payload)
            elif kind == "sleep":
                await asyncio.sleep(payload)
                result = None
            else:
                asked, timeout = payload
                result = _ask(policy, accepted, *asked)
                if inspect.isawaitable(result):
                    try:
                        result = await asyncio.wait_for(_awaited(result), timeout)
                    except asyncio.TimeoutError:
                        result = _TIMED_OUT
    except StopIteration as stop:
        return stop.value


def _ask(policy: Policy, accepted: frozenset[str], observations: list[str], infos: list[dict[str, Any]],
         episodes: list[Episode]) -> Any:
    """``policy(observations)``, with ``infos=`` and ``episodes=`` where ``accepted`` has them."""
    return policy(observations, **_keywords(accepted, infos, episodes))


def _accepted(function: Any) -> frozenset[str]:
    """Which of the keywords ``infos`` and ``episodes`` ``function`` takes."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return frozenset()
    return frozenset(name for name in ("infos", "episodes") if name in parameters)


def _keywords(accepted: frozenset[str], infos: list[dict[str, Any]], episodes: list[Episode]) -> dict[str, Any]:
    """``infos`` and ``episodes`` as keywords, those in ``accepted``."""
    return {name: value for name, value in (("infos", infos), ("episodes", episodes)) if name in accepted}


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _limited(time_left: Any) -> dict[str, Any]:
    """The ``time_left`` keyword of a vector environment's call, when there is a limit."""
    return {} if time_left is None else {"time_left": time_left}


def _bounded(vec_env: Any, awaitable: Awaitable[Any], timeout: float | None) -> Any:
    """An async policy's answer, awaited on the vector environment's loop for at most
    ``timeout`` seconds (then cancelled: :data:`_TIMED_OUT`)."""
    future = vec_env._loop.submit(_awaited(awaitable))
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        return _TIMED_OUT


def _act_streaming(vec_env: Any, policy: Any, accepted: frozenset[str], observations: list[str],
                   infos: list[dict[str, Any]],
                   episodes: list[Episode], slots: list[int], time_left: list[float | None] | None,
                   in_flight: bool) -> tuple[list[str], tuple[Any, ...] | None]:
    """The actions of a streaming policy for ``slots``, each slot stepped as soon as its action
    comes; returns the actions and the slots' step results, in the order of ``slots`` (None when
    ``in_flight``: the steps were begun, and their rows come from ``vec_env.finished``)."""
    import numpy as np

    actions: list[Any] = [None] * len(slots)
    rows: list[Any] = [None] * len(slots)
    for positions, chunk in policy.stream_actions(observations, **_keywords(accepted, infos, episodes)):
        positions = list(positions)
        chunk = _checked_actions(chunk, len(positions))
        if not positions:
            continue
        if len(set(positions)) < len(positions) or any(
                not isinstance(p, int) or not 0 <= p < len(slots) or actions[p] is not None for p in positions):
            raise GemError(f"The policy's stream handed over positions {positions}; give each of the "
                           f"{len(slots)} observations' positions once.")
        for p, action in zip(positions, chunk):
            actions[p] = action
        limits = None if time_left is None else [time_left[p] for p in positions]
        if in_flight:
            vec_env.begin_step(chunk, [slots[p] for p in positions], time_left=limits)
            continue
        for p, *row in zip(positions, *vec_env.step(chunk, [slots[p] for p in positions], **_limited(limits))):
            rows[p] = row
    if any(action is None for action in actions):
        missing = [p for p, action in enumerate(actions) if action is None]
        raise GemError(f"The policy's stream ended without actions for positions {missing}; "
                       "hand over one action per observation.")
    if in_flight:
        return list(actions), None
    observations_, rewards, terminated, truncated, infos_ = zip(*rows)
    return list(actions), (list(observations_), np.array(rewards, dtype=np.float64), np.array(terminated, dtype=np.bool_),
                           np.array(truncated, dtype=np.bool_), list(infos_))


@dataclass(frozen=True)
class _ResetPolicy:
    max_failures: int
    backoff: float
    max_failure_share: float

    def check(self) -> None:
        if isinstance(self.max_failures, bool) or not isinstance(self.max_failures, int) or self.max_failures < 1:
            raise GemError(f"max_reset_failures must be a positive integer, got {self.max_failures!r}.")
        if not isinstance(self.backoff, (int, float)) or isinstance(self.backoff, bool) or self.backoff < 0:
            raise GemError(f"reset_backoff must be a number of seconds >= 0, got {self.backoff!r}.")
        if not isinstance(self.max_failure_share, (int, float)) or not 0 < self.max_failure_share <= 1:
            raise GemError(f"max_reset_failure_share must be within (0, 1], got {self.max_failure_share!r}.")


@dataclass(frozen=True)
class _Settings:
    num_episodes: int
    seed: Any
    max_turns: int | None
    episode_deadline: float | None
    deadline: float | None
    carry_over: bool
    spares: int
    group_size: int
    policy_version: int | None
    resets: _ResetPolicy
    progress: bool
    on_episode: Callable[[Episode], Any] | None
    replay_lost: bool

    def check(self, step_timeout: float | None) -> None:
        for name, value in (("num_episodes", self.num_episodes), ("max_turns", self.max_turns)):
            if value is None and name == "max_turns":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise GemError(f"{name} must be a positive integer, got {value!r}.")
        for name, what in (("episode_deadline", "an episode"), ("deadline", "the collection")):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise GemError(f"{name} must be a positive number of seconds (or None), got {value!r}.")
            if step_timeout is not None and value < step_timeout:
                raise GemError(f"{name} ({value:g} s) is shorter than the vector environment's step_timeout "
                               f"({step_timeout:g} s): a single step of {what} may take longer than {what} is "
                               f"given. Raise {name}, or lower step_timeout.")
        if isinstance(self.spares, bool) or not isinstance(self.spares, int) or self.spares < 0:
            raise GemError(f"spares must be a number of episodes >= 0, got {self.spares!r}.")
        g = self.group_size
        if isinstance(g, bool) or not isinstance(g, int) or g < 1:
            raise GemError(f"group_size must be a positive integer, got {g!r}.")
        if self.num_episodes % g or self.spares % g:
            raise GemError(f"num_episodes ({self.num_episodes}) and spares ({self.spares}) must be whole groups of "
                           f"group_size ({g}) episodes.")
        if not isinstance(self.carry_over, bool):
            raise GemError(f"carry_over must be True or False, got {self.carry_over!r}.")
        if self.policy_version is not None and (isinstance(self.policy_version, bool)
                                                or not isinstance(self.policy_version, int)):
            raise GemError(f"policy_version must be an integer or None, got {self.policy_version!r}.")
        self.resets.check()


@dataclass
class _Running:
    """An episode in progress on a slot."""

    order: int
    episode: Episode
    observation: str
    info: dict[str, Any] = field(default_factory=dict)  # the observation's info
    deadline: float | None = None  # time.monotonic() at which its episode deadline passes
    action: str | None = None  # sampled and not stepped yet (carried past a collection's deadline)
    version: int | None = None  # the policy version that sampled ``action``
    ready_at: float = field(default_factory=time.monotonic)  # since when it waits for the policy


@dataclass
class _Failures:
    """The failed resets of one slot since its last good one."""

    seeds: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    retry_at: float = 0.0
    asked_at: float = 0.0  # when its reset was asked (the new episode's clock starts then)
    seed: int | None = None  # the seed to start with (an episode lost with its host, played again)


@dataclass
class _Stepping:
    """A slot's call in progress: the action stepped (None: a reset) and who sampled it."""

    action: str | None
    version: int | None = None


@dataclass
class _Carried:
    """What a collection with ``carry_over`` leaves in ``vec_env.carried`` for the next one."""

    running: dict[int, _Running]
    stepping: dict[int, _Stepping]  # the calls in flight of the running episodes
    fresh: set[int]
    order: int
    paused_at: float
    ended: list[tuple[int, Episode]] = field(default_factory=list)  # ended beyond the episodes asked for

    def __len__(self) -> int:
        return len(self.running) + len(self.ended)

    def episodes(self) -> list[Episode]:
        """The episodes carried over, in the order they started."""
        return [item.episode for item in sorted(self.running.values(), key=lambda r: r.order)] + \
            [episode for _, episode in self.ended]

    def sampled(self) -> Iterator[tuple[str, str]]:
        """Every ``(observation, action)`` a policy sampled for the carried episodes: their turns,
        and the actions sampled and not played yet (or in a call in flight)."""
        for slot, running in self.running.items():
            for turn in running.episode.turns:
                yield turn.observation, turn.action
            stepped = self.stepping.get(slot)
            action = running.action if running.action is not None else stepped.action if stepped else None
            if action is not None:
                yield running.observation, action
        for _, episode in self.ended:
            for turn in episode.turns:
                yield turn.observation, turn.action


@dataclass
class _Ledger:
    """Which slot runs which episode, which slots wait for a new one, and what is in flight."""

    target: int  # episodes this collection may start (carried ones included)
    started: int = 0
    order: int = 0  # the next episode's place in the order episodes started (across collections)
    running: dict[int, _Running] = field(default_factory=dict)
    waiting: dict[int, _Failures] = field(default_factory=dict)  # slot -> its failed resets in a row
    stepping: dict[int, _Stepping] = field(default_factory=dict)  # slot -> its call in progress
    fresh: set[int] = field(default_factory=set)  # slots whose environment waits for a reset
    finished: list[tuple[int, Episode]] = field(default_factory=list)
    resets: int = 0
    failed_resets: int = 0
    policy_seconds: float = 0.0  # how long the last policy call took

    def want_more(self) -> bool:
        return self.started + len(self.waiting) < self.target

    def idle(self, slot: int) -> bool:
        return slot not in self.running and slot not in self.waiting and slot not in self.stepping


def _collect(vec_env: Any, s: _Settings, *, streaming: bool = False) -> Generator[tuple[str, Any], Any, list[Episode]]:
    """The collection logic, as requests for a driver: ``reset``, ``step`` (blocking),
    ``finished`` (rows of calls in flight), ``policy``, ``sleep``; with ``streaming``, ``act``
    (the policy's actions, with the acting slots stepped or begun as they come)."""
    from gem_core.vector.base import EPISODE_SEED, FAULT, FINAL_INFO, FINAL_OBSERVATION, VectorEnv

    if not isinstance(vec_env, VectorEnv):
        raise GemError("collect_episodes needs a vector environment (gem_core.make_vec), "
                       f"got {type(vec_env).__name__}.")
    s.check(vec_env.step_timeout)
    healthy = vec_env.healthy_slots
    if not healthy:
        raise GemError(_all_quarantined(vec_env))
    num_episodes, policy = s.num_episodes, s.resets
    began = time.monotonic()
    ends_at = None if s.deadline is None else began + s.deadline
    # With a deadline, a concurrent vector environment's slots go at their own pace (calls in flight).
    in_flight = bool(vec_env.concurrent and (s.deadline is not None or s.episode_deadline is not None))
    keep_calls = in_flight and s.carry_over  # calls running at the deadline carry over, bounded by their episodes'
    ledger = _Ledger(num_episodes + s.spares)
    carried: _Carried | None = vec_env.carried
    vec_env.carried = None
    # whether calls get a time_left (carried episodes may keep deadlines of their own)
    timed = s.episode_deadline is not None or (ends_at is not None and not keep_calls) or carried is not None
    if carried is not None:  # continue what the last collection left running, its clocks restarted
        for running in carried.running.values():
            if running.deadline is not None:
                running.deadline += began - carried.paused_at
        ledger.running, ledger.stepping = carried.running, carried.stepping
        ledger.fresh, ledger.order = carried.fresh, carried.order
        ledger.started = len(carried.running) + len(carried.ended)
        for order, episode in carried.ended:  # ended in the last collection, beyond what it returned
            ledger.finished.append((order, episode))
    env_ids = vec_env.env_ids
    stop_reason = ""

    def time_left(slot: int, now: float) -> float | None:
        """Seconds the next call of ``slot`` may take."""
        limits = []
        running = ledger.running.get(slot)
        if running is not None and running.deadline is not None:
            limits.append(running.deadline - now)
        elif running is None and s.episode_deadline is not None:  # a reset: the new episode's clock starts
            limits.append(s.episode_deadline)
        if ends_at is not None and not keep_calls:
            limits.append(ends_at - now)
        return min(limits) if limits else None

    def limits_of(slots: Sequence[int], now: float) -> list[float | None] | None:
        if not timed:
            return None
        limits = [time_left(slot, now) for slot in slots]
        return None if all(limit is None for limit in limits) else limits

    def begin(slot: int, observation: str, info: dict[str, Any]) -> None:
        failures = ledger.waiting.pop(slot, None)
        ledger.fresh.discard(slot)
        ledger.resets += 1
        episode = Episode(env_id=env_ids[slot], seed=info[EPISODE_SEED])
        asked_at = failures.asked_at if failures is not None and failures.asked_at else time.monotonic()
        ledger.running[slot] = _Running(ledger.order, episode, observation, info,
                                        None if s.episode_deadline is None else asked_at + s.episode_deadline)
        ledger.started += 1
        ledger.order += 1

    def reset_failed(slot: int, info: dict[str, Any]) -> None:
        fault = info.get(FAULT, {})
        failures = ledger.waiting.setdefault(slot, _Failures())
        ledger.fresh.add(slot)
        if _host_lost(info):  # not the environment's failure: try again at once, with the same seed
            failures.seed = fault.get("seed")
            return
        if ends_at is not None and fault.get("kind") == "deadline" and time.monotonic() >= ends_at:
            return  # cut by the collection's deadline: not the environment's failure
        ledger.resets += 1
        ledger.failed_resets += 1
        failures.seeds.append(fault.get("seed"))
        failures.errors.append(str(fault.get("error") or fault.get("kind", "unknown fault")))
        if len(failures.seeds) >= policy.max_failures:
            ledger.waiting.pop(slot)
            vec_env.quarantine(slot, {
                "reason": f"failed to reset {len(failures.seeds)} times in a row",
                "seeds": failures.seeds, "errors": failures.errors})
            for idle in vec_env.healthy_slots:  # a slot left idle for this one's episode takes it over
                if ledger.idle(idle) and ledger.want_more():
                    refill(idle)
            if not ledger.running and not ledger.waiting and len(ledger.finished) < num_episodes:
                raise GemError(_all_quarantined(vec_env))
        else:
            failures.retry_at = time.monotonic() + policy.backoff * 2 ** (len(failures.seeds) - 1)
        if ledger.resets >= MIN_RESETS_FOR_SHARE and ledger.failed_resets > policy.max_failure_share * ledger.resets:
            raise GemError(
                f"{ledger.failed_resets} of {ledger.resets} resets failed, more than the allowed share "
                f"({policy.max_failure_share:g}, max_reset_failure_share). {_fault_summary(vec_env, ledger)}")

    def refill(slot: int) -> None:
        """A healthy slot whose episode ended starts another if more are wanted."""
        if ledger.want_more():
            ledger.waiting[slot] = _Failures()

    def finish(slot: int, final_observation: str, bar: Any) -> None:
        running = ledger.running.pop(slot)
        running.episode.final_observation = final_observation
        ledger.finished.append((running.order, running.episode))
        bar.advance(1)
        if s.on_episode is not None:
            s.on_episode(running.episode)

    def fail_idle(slot: int, error: str, bar: Any) -> None:
        """End the episode of ``slot`` (not in a call) failed by a deadline, its environment replaced."""
        running = ledger.running[slot]
        running.episode.fail("deadline", error, "policy")
        finish(slot, running.observation, bar)
        vec_env.retire([slot])
        ledger.fresh.add(slot)

    def expire(now: float, bar: Any) -> None:
        """Fail the episodes past their deadline that are not in a call (waiting for the policy,
        or holding an action not stepped yet)."""
        if s.episode_deadline is None and carried is None:  # no episode has a deadline
            return
        for slot in [slot for slot, r in ledger.running.items()
                     if slot not in ledger.stepping and r.deadline is not None and r.deadline <= now]:
            fail_idle(slot, f"the episode ran past its deadline ({s.episode_deadline:g} s)", bar)
            refill(slot)

    def reset_row(slot: int, observation: str, info: dict[str, Any]) -> None:
        if EPISODE_SEED in info:
            begin(slot, observation, info)
        else:
            reset_failed(slot, info)

    def step_row(slot: int, stepped: _Stepping, row: Any, bar: Any, cut_off: list[int]) -> None:
        observation, reward, terminated, truncated, info = row
        running = ledger.running[slot]
        if s.replay_lost and _host_lost(info):  # start it again, from its seed, where the slot lives now
            ledger.running.pop(slot)
            ledger.started -= 1
            ledger.waiting[slot] = _Failures(seed=running.episode.seed)
            ledger.fresh.add(slot)
            return
        ended = bool(terminated or truncated)
        if ended and FINAL_INFO in info:  # same-step autoreset: the row shows the next episode
            turn_info, final = info[FINAL_INFO], info[FINAL_OBSERVATION]
        else:
            turn_info, final = info, observation
        fault = info.get(FAULT) if FINAL_INFO not in info else None
        if ended and fault is not None and fault.get("phase") == "step":  # the environment failed it
            running.episode.failure = Failure.from_fault(fault, len(running.episode.turns))
        running.episode.turns.append(Turn(running.observation, stepped.action, float(reward),  # type: ignore[arg-type]
                                          bool(terminated), bool(truncated), turn_info, stepped.version))
        running.action = None
        if ended:
            finish(slot, final, bar)
            if FINAL_INFO not in info or FAULT in info:  # its environment waits for a reset
                ledger.fresh.add(slot)
            if not ledger.want_more():
                return
            refill(slot)
            if planned:  # the next episode starts with its planned seed
                return
            if EPISODE_SEED in info:  # same-step autoreset started the next episode
                begin(slot, observation, info)
            elif FAULT in info and info[FAULT].get("phase") == "reset":  # same-step reset failed
                reset_failed(slot, info)
        elif s.max_turns is not None and len(running.episode.turns) >= s.max_turns:
            running.episode.turns[-1].truncated = True
            finish(slot, observation, bar)
            if ledger.want_more():
                refill(slot)
                cut_off.append(slot)
        else:
            running.observation, running.info = observation, turn_info
            if in_flight:  # only the hold for more ready episodes reads it
                running.ready_at = time.monotonic()

    def handle(rows: Sequence[tuple[int, Any]], bar: Any, cut_off: list[int]) -> None:
        for slot, row in rows:
            stepped = ledger.stepping.pop(slot)
            if stepped.action is None or slot not in ledger.running:  # a reset (lone, or by a step of "")
                reset_row(slot, row[0], row[4])
            else:
                step_row(slot, stepped, row, bar, cut_off)

    free = [slot for slot in healthy if ledger.idle(slot)]
    first = free[:max(0, ledger.target - ledger.started - len(ledger.waiting))]
    planned: list[int] = []  # the seeds of the episodes still to start, when a list was given
    seed = s.seed
    if isinstance(seed, int) and not isinstance(seed, bool):
        seed = [seed + slot for slot in first]  # the seeds these slots would get in a full reset
    elif isinstance(seed, Sequence) and not isinstance(seed, (str, bytes)):
        planned = list(seed)[len(first):]
        seed = list(seed)[:len(first)]  # quarantined slots left fewer to reset: the first seeds, in order

    def issue(resets: list[int], steps: list[int], actions: list[str]) -> Generator[tuple[str, Any], Any, Any]:
        """Start episodes on ``resets`` (explicitly: their planned seeds, the seed of an episode
        played again, or their own) and step ``steps`` with ``actions`` (a waiting slot's action
        is "": its step resets it); returns the rows (blocking), or begins the calls."""
        now = time.monotonic()
        rows: list[tuple[int, Any]] = []
        for slot in resets:
            failures = ledger.waiting[slot]
            failures.asked_at = now
            ledger.stepping[slot] = _Stepping(None)
        groups: dict[bool, tuple[list[int], list[int]]] = {}
        for slot in resets:
            failures = ledger.waiting[slot]
            chosen = failures.seed if failures.seed is not None else (planned.pop(0) if planned else None)
            slots, seeds = groups.setdefault(chosen is None, ([], []))
            slots.append(slot)
            seeds.append(chosen)  # type: ignore[arg-type]
        for own, (slots, seeds) in groups.items():
            limits = limits_of(slots, now)
            if in_flight:
                vec_env.begin_reset(None if own else seeds, slots, time_left=limits)
            else:
                observations, infos = yield "reset", (None if own else seeds, slots, limits)
                rows += [(slot, (o, 0.0, False, False, i)) for slot, o, i in zip(slots, observations, infos)]
        if steps:
            limits = limits_of(steps, now)
            for slot in steps:
                if slot in ledger.waiting:
                    ledger.waiting[slot].asked_at = now
            if in_flight:
                vec_env.begin_step(actions, steps, time_left=limits)
            else:
                rows += list(zip(steps, zip(*(yield "step", (actions, steps, limits)))))
        return rows

    with _progress_bar(s.progress, num_episodes) as bar:
        if first:
            for slot in first:
                ledger.waiting[slot] = _Failures(seed=None)
            now = time.monotonic()
            for slot in first:
                ledger.waiting[slot].asked_at = now
                ledger.stepping[slot] = _Stepping(None)
            limits = limits_of(first, now)
            if in_flight:
                vec_env.begin_reset(seed, first, time_left=limits)
            else:
                observations, infos = yield "reset", (seed, first, limits)
                handle([(slot, (o, 0.0, False, False, i)) for slot, o, i in zip(first, observations, infos)],
                       bar, [])
        rows: list[tuple[int, Any]] = []
        while True:
            cut_off: list[int] = []
            handle(rows, bar, cut_off)
            rows = []
            if cut_off:  # these environments still run the episode cut off: reset them explicitly
                rows = yield from issue(cut_off, [], [])
                continue
            now = time.monotonic()
            expire(now, bar)
            if _whole(ledger.finished, s.group_size) >= num_episodes:
                stop_reason = "enough"
                break
            if ends_at is not None and now >= ends_at:
                stop_reason = "deadline"
                break
            if not ledger.running and not ledger.waiting and not ledger.stepping:
                break  # nothing left to play (slots quarantined, or no more to start)
            ready = [slot for slot in sorted(ledger.running) if slot not in ledger.stepping]
            to_ask = [slot for slot in ready if ledger.running[slot].action is None]
            busy = sum(1 for slot in ledger.stepping if slot in ledger.running)
            hold_until = None
            if in_flight and to_ask and busy and len(to_ask) < busy:
                # fewer ready than running: wait for more to join, at most as long as the last policy call took
                hold_until = min(ledger.running[slot].ready_at for slot in to_ask) + ledger.policy_seconds
                if now < hold_until:
                    to_ask = []
            acted: Any = None
            if to_ask:
                asked_at = time.monotonic()
                asked = ([ledger.running[slot].observation for slot in to_ask],
                         [ledger.running[slot].info for slot in to_ask],
                         [ledger.running[slot].episode for slot in to_ask])
                timeout = None if ends_at is None else max(0.0, ends_at - now)
                if streaming:
                    limits = limits_of(to_ask, now)
                    for slot in to_ask:
                        ledger.stepping[slot] = _Stepping(None)  # placeholders until the actions come
                    actions, acted = yield "act", (*asked, to_ask, limits, in_flight)
                    for slot, action in zip(to_ask, actions):
                        ledger.stepping[slot] = _Stepping(action, s.policy_version)
                    if acted is not None:
                        rows += list(zip(to_ask, zip(*acted)))
                else:
                    answer = yield "policy", (asked, timeout)
                    if answer is _TIMED_OUT:
                        stop_reason = "deadline"
                        break
                    for slot, action in zip(to_ask, _checked_actions(answer, len(to_ask))):
                        ledger.running[slot].action, ledger.running[slot].version = action, s.policy_version
                now = time.monotonic()
                ledger.policy_seconds = now - asked_at
                if ends_at is not None and now >= ends_at and not rows and not streaming:
                    stop_reason = "deadline"  # the sampled actions carry over with their episodes
                    break
                expire(now, bar)
            steps = [slot for slot in sorted(ledger.running)
                     if slot not in ledger.stepping and ledger.running[slot].action is not None]
            actions = [ledger.running[slot].action for slot in steps]  # type: ignore[misc]
            for slot in steps:
                ledger.stepping[slot] = _Stepping(ledger.running[slot].action, ledger.running[slot].version)
            due = sorted(slot for slot, failures in ledger.waiting.items()
                         if slot not in ledger.stepping and failures.retry_at <= now)
            by_step = [slot for slot in due if slot in ledger.fresh and ledger.waiting[slot].seed is None and not planned]
            explicit = [slot for slot in due if slot not in by_step]
            for slot in by_step:
                ledger.stepping[slot] = _Stepping(None)
            if steps or explicit or by_step:
                rows += yield from issue(explicit, steps + by_step, actions + [""] * len(by_step))
            if vec_env.in_flight:  # calls left running (this collection's, or carried over)
                rows += yield "finished", _wake_in(ledger, ends_at, now, hold_until)
                continue
            if not rows and not ledger.stepping and ledger.waiting and not steps and not due:
                backoff = min(f.retry_at for f in ledger.waiting.values()) - time.monotonic()
                if ends_at is not None:
                    backoff = min(backoff, ends_at - time.monotonic())
                yield "sleep", max(0.0, backoff)
        kept, extra = _kept(ledger.finished, num_episodes, s.group_size if stop_reason == "enough" else 1)
        _settle(vec_env, ledger, s, stop_reason, bar, finish, extra)
        if stop_reason != "enough":
            kept = ledger.finished[:num_episodes]  # with those the deadline failed as it settled
    return [episode for _, episode in sorted(kept, key=lambda item: item[0])]


def _whole(finished: list[tuple[int, Episode]], group_size: int) -> int:
    """How many of the ``finished`` episodes are in whole groups (all of them, for groups of 1)."""
    if group_size == 1:
        return len(finished)
    members = Counter((episode.env_id, episode.seed) for _, episode in finished)
    return sum(count - count % group_size for count in members.values())


def _kept(finished: list[tuple[int, Episode]], num_episodes: int,
          group_size: int) -> tuple[list[tuple[int, Episode]], list[tuple[int, Episode]]]:
    """The episodes a collection returns, the first ``num_episodes`` to end in whole groups, and
    the others that ended (in the order they ended)."""
    if group_size == 1:
        return finished[:num_episodes], finished[num_episodes:]
    kept: list[tuple[int, Episode]] = []
    pending: dict[tuple[str, Any], list[tuple[int, Episode]]] = {}
    for item in finished:
        group = pending.setdefault((item[1].env_id, item[1].seed), [])
        group.append(item)
        if len(group) == group_size and len(kept) < num_episodes:
            kept += group
            group.clear()
    taken = {id(item) for item in kept}
    return kept, [item for item in finished if id(item) not in taken]


def _wake_in(ledger: _Ledger, ends_at: float | None, now: float, hold_until: float | None) -> float | None:
    """How long to wait for calls in flight: until the first of them is done, the collection's
    deadline, the next retry of a failed reset, the deadline of an episode left waiting, or the end
    of the wait of the episodes held for more to join them."""
    moments = [f.retry_at for slot, f in ledger.waiting.items() if slot not in ledger.stepping]
    moments += [r.deadline for slot, r in ledger.running.items() if slot not in ledger.stepping and r.deadline]
    moments += [moment for moment in (ends_at, hold_until) if moment is not None]
    return max(0.0, min(moments) - now) if moments else None


def _settle(vec_env: Any, ledger: _Ledger, s: _Settings, stop_reason: str, bar: Any,
            finish: Callable[[int, str, Any], None], extra: list[tuple[int, Episode]]) -> None:
    """What happens to the episodes still running when the collection ends: carried over, failed
    by the deadline, or (spares not needed) dropped, their environments reset. ``extra``: those
    that ended but are not returned (spares that ended with the last ones needed, or the members
    of groups not whole), carried over with the running ones or dropped."""
    if stop_reason == "" or not (ledger.running or ledger.stepping or extra):
        return
    starting = [slot for slot in ledger.stepping if slot not in ledger.running and slot in vec_env.in_flight]
    vec_env.cancel(starting)  # episodes not started yet start in no later collection
    if s.carry_over:
        stepping = {slot: stepped for slot, stepped in ledger.stepping.items() if slot in ledger.running}
        vec_env.carried = _Carried(ledger.running, stepping, ledger.fresh, ledger.order, time.monotonic(), extra)
        return
    in_flight = [slot for slot in ledger.stepping if slot in vec_env.in_flight]
    vec_env.cancel(in_flight)  # given up now: their environments are closed and replaced
    for slot in sorted(ledger.running):
        running = ledger.running[slot]
        if stop_reason == "deadline":
            stepped = ledger.stepping.get(slot)
            phase = "step" if stepped is not None and stepped.action is not None else "policy"
            running.episode.fail("deadline", "the collection's deadline passed", phase)
            finish(slot, running.observation, bar)
            if slot not in in_flight:
                vec_env.retire([slot])
        else:
            del ledger.running[slot]  # a spare not needed: dropped; its environment resets when next used


def _host_lost(info: dict[str, Any]) -> bool:
    fault = info.get("fault")
    return isinstance(fault, dict) and fault.get("kind") == "host_lost"


def _all_quarantined(vec_env: Any) -> str:
    return "No healthy slot is left: every environment kept failing to reset. " + _fault_summary(vec_env)


def _fault_summary(vec_env: Any, ledger: _Ledger | None = None) -> str:
    """The quarantined slots' reports, then the slots still retrying, as one paragraph."""
    parts = [f"slot {r['slot']} ({r['env_id']}): seeds {r['seeds']}, errors {r['errors'][-1:]}"
             for r in vec_env.quarantined.values()]
    if ledger is not None:
        parts += [f"slot {slot} ({vec_env.env_ids[slot]}): seeds {f.seeds}, errors {f.errors[-1:]}"
                  for slot, f in ledger.waiting.items() if f.seeds]
    return ("Failed resets: " + "; ".join(parts) + ".") if parts else ""


def _checked_actions(actions: Any, expected: int) -> list[str]:
    if isinstance(actions, (str, bytes)) or not isinstance(actions, Sequence):
        raise GemError(f"The policy returned {type(actions).__name__}; return a list of action strings, "
                       "one per observation.")
    if len(actions) != expected:
        raise GemError(f"The policy returned {len(actions)} actions for {expected} observations; "
                       "return one action per observation, in order.")
    for k, action in enumerate(actions):
        if not isinstance(action, str):
            raise GemError(f"The policy returned {type(action).__name__} as action {k}; actions are strings.")
    return list(actions)


def _progress_bar(enabled: bool, total: int) -> Any:
    if not enabled:
        return nullcontext(_NoBar())
    return _RichBar(total)


class _NoBar:
    def advance(self, n: int) -> None:
        pass


class _RichBar:
    def __init__(self, total: int):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(TextColumn("episodes"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        self._task = self._progress.add_task("episodes", total=total)

    def __enter__(self) -> _RichBar:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def advance(self, n: int) -> None:
        self._progress.advance(self._task, n)

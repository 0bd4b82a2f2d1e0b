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
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
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


def collect_episodes(vec_env: Any, policy: Policy, num_episodes: int, *, seed: int | Sequence[int] | None = None,
                     max_turns: int | None = None, max_reset_failures: int = MAX_RESET_FAILURES,
                     reset_backoff: float = RESET_BACKOFF,
                     max_reset_failure_share: float = MAX_RESET_FAILURE_SHARE,
                     progress: bool = False, on_episode: Callable[[Episode], Any] | None = None,
                     replay_lost: bool = True) -> list[Episode]:
    """Run ``policy`` on ``vec_env`` until ``num_episodes`` episodes have ended; return them in
    the order they started.

    ``policy`` may be synchronous or ``async`` (its coroutines run on the vector environment's
    event loop); from a coroutine, use :func:`acollect_episodes`. ``seed``: an int for the first
    reset, or the list of the episodes' seeds (see the module documentation). ``max_turns`` cuts
    an episode off (its last turn marked truncated) after that many turns. Failed resets are retried, and slots that keep failing are
    quarantined, as the module documentation says (``max_reset_failures``, ``reset_backoff``,
    ``max_reset_failure_share``). ``progress`` shows a progress bar. ``on_episode`` is called with
    each episode as it ends (to save or count it before the collection is over).
    """
    streaming = callable(getattr(policy, "stream_actions", None))
    steps = _collect(vec_env, num_episodes, seed, max_turns,
                     _ResetPolicy(max_reset_failures, reset_backoff, max_reset_failure_share), progress, on_episode,
                     streaming=streaming)
    result: Any = None
    try:
        while True:
            kind, payload = steps.send(result)
            if kind == "reset":
                result = vec_env.reset(*payload)
            elif kind == "step":
                result = vec_env.step(*payload)
            elif kind == "act":
                result = _act_streaming(vec_env, policy, *payload)
            elif kind == "wait":
                time.sleep(payload)
                result = None
            else:
                result = _ask(policy, *payload)
                if inspect.isawaitable(result):
                    result = vec_env.run_coroutine(_awaited(result))
    except StopIteration as stop:
        return stop.value


async def acollect_episodes(vec_env: Any, policy: Policy, num_episodes: int, *,
                            seed: int | Sequence[int] | None = None, max_turns: int | None = None,
                            max_reset_failures: int = MAX_RESET_FAILURES, reset_backoff: float = RESET_BACKOFF,
                            max_reset_failure_share: float = MAX_RESET_FAILURE_SHARE,
                            progress: bool = False,
                            on_episode: Callable[[Episode], Any] | None = None,
                            replay_lost: bool = True) -> list[Episode]:
    """:func:`collect_episodes` for async callers: awaits the policy and the vector
    environment's ``areset``/``astep`` on the running loop."""
    steps = _collect(vec_env, num_episodes, seed, max_turns,
                     _ResetPolicy(max_reset_failures, reset_backoff, max_reset_failure_share), progress, on_episode,
                     replay_lost)
    result: Any = None
    try:
        while True:
            kind, payload = steps.send(result)
            if kind == "reset":
                result = await vec_env.areset(*payload)
            elif kind == "step":
                result = await vec_env.astep(*payload)
            elif kind == "wait":
                await asyncio.sleep(payload)
                result = None
            else:
                result = _ask(policy, *payload)
                if inspect.isawaitable(result):
                    result = await result
    except StopIteration as stop:
        return stop.value


def _ask(policy: Policy, observations: list[str], infos: list[dict[str, Any]], episodes: list[Episode]) -> Any:
    """``policy(observations)``, with ``infos=`` and ``episodes=`` for a policy that takes them."""
    return policy(observations, **_keywords(policy, infos, episodes))


def _keywords(function: Any, infos: list[dict[str, Any]], episodes: list[Episode]) -> dict[str, Any]:
    """``infos`` and ``episodes`` as keywords, those that ``function`` takes."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        parameters = {}  # type: ignore[assignment]
    return {name: value for name, value in (("infos", infos), ("episodes", episodes)) if name in parameters}


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _act_streaming(vec_env: Any, policy: Any, observations: list[str], infos: list[dict[str, Any]],
                   episodes: list[Episode], slots: list[int]) -> tuple[list[str], tuple[Any, ...]]:
    """The actions of a streaming policy for ``slots``, each slot stepped as soon as its action
    comes; returns the actions and the slots' step results, in the order of ``slots``."""
    import numpy as np

    actions: list[Any] = [None] * len(slots)
    rows: list[Any] = [None] * len(slots)
    for positions, chunk in policy.stream_actions(observations, **_keywords(policy.stream_actions, infos, episodes)):
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
        for p, *row in zip(positions, *vec_env.step(chunk, [slots[p] for p in positions])):
            rows[p] = row
    if any(action is None for action in actions):
        missing = [p for p, action in enumerate(actions) if action is None]
        raise GemError(f"The policy's stream ended without actions for positions {missing}; "
                       "hand over one action per observation.")
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


@dataclass
class _Running:
    order: int
    episode: Episode
    observation: str
    info: dict[str, Any] = field(default_factory=dict)  # the observation's info


@dataclass
class _Failures:
    """The failed resets of one slot since its last good one."""

    seeds: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    retry_at: float = 0.0


@dataclass
class _Ledger:
    """Which slot runs which episode, and which slots wait for a new one."""

    target: int
    started: int = 0
    running: dict[int, _Running] = field(default_factory=dict)
    waiting: dict[int, _Failures] = field(default_factory=dict)  # slot -> its failed resets in a row
    finished: list[tuple[int, Episode]] = field(default_factory=list)
    resets: int = 0
    failed_resets: int = 0

    def want_more(self) -> bool:
        return self.started + len(self.waiting) < self.target


def _collect(vec_env: Any, num_episodes: int, seed: Any, max_turns: int | None, policy: _ResetPolicy,
             progress: bool, on_episode: Callable[[Episode], Any] | None = None, replay_lost: bool = True,
             *, streaming: bool = False) -> Generator[tuple[str, Any], Any, list[Episode]]:
    """The collection logic, as requests (``reset``, ``policy``, ``step``, ``wait``; with
    ``streaming``, ``act``: the policy's actions with the acting slots stepped) for a driver."""
    from gem_core.vector.base import EPISODE_SEED, FAULT, FINAL_INFO, FINAL_OBSERVATION, VectorEnv

    if not isinstance(vec_env, VectorEnv):
        raise GemError("collect_episodes needs a vector environment (gem_core.make_vec), "
                       f"got {type(vec_env).__name__}.")
    for name, value in (("num_episodes", num_episodes), ("max_turns", max_turns)):
        if value is None and name == "max_turns":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise GemError(f"{name} must be a positive integer, got {value!r}.")
    policy.check()
    healthy = vec_env.healthy_slots
    if not healthy:
        raise GemError(_all_quarantined(vec_env))
    ledger = _Ledger(num_episodes)
    env_ids = vec_env.env_ids

    def begin(slot: int, observation: str, info: dict[str, Any]) -> None:
        ledger.waiting.pop(slot, None)
        ledger.resets += 1
        episode = Episode(env_id=env_ids[slot], seed=info[EPISODE_SEED])
        ledger.running[slot] = _Running(ledger.started, episode, observation, info)
        ledger.started += 1

    def reset_failed(slot: int, info: dict[str, Any]) -> None:
        if _host_lost(info):  # not the environment's failure: try again at once, with the same seed
            ledger.waiting.setdefault(slot, _Failures())
            return
        ledger.resets += 1
        ledger.failed_resets += 1
        fault = info.get(FAULT, {})
        failures = ledger.waiting.setdefault(slot, _Failures())
        failures.seeds.append(fault.get("seed"))
        failures.errors.append(str(fault.get("error") or fault.get("kind", "unknown fault")))
        if len(failures.seeds) >= policy.max_failures:
            ledger.waiting.pop(slot)
            vec_env.quarantine(slot, {
                "reason": f"failed to reset {len(failures.seeds)} times in a row",
                "seeds": failures.seeds, "errors": failures.errors})
            for idle in vec_env.healthy_slots:  # a slot left idle for this one's episode takes it over
                if idle not in ledger.running and idle not in ledger.waiting and ledger.want_more():
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
        """A healthy slot whose episode ended starts another if more are wanted: it resets on its next step."""
        if ledger.want_more():
            ledger.waiting[slot] = _Failures()

    def finish(slot: int, final_observation: str, bar: Any) -> None:
        running = ledger.running.pop(slot)
        running.episode.final_observation = final_observation
        ledger.finished.append((running.order, running.episode))
        bar.advance(1)
        if on_episode is not None:
            on_episode(running.episode)

    def reset_row(slot: int, observation: str, info: dict[str, Any]) -> None:
        if EPISODE_SEED in info:
            begin(slot, observation, info)
        else:
            reset_failed(slot, info)

    first = healthy[:num_episodes]
    planned: list[int] = []  # the seeds of the episodes still to start, when a list was given
    if isinstance(seed, int) and not isinstance(seed, bool):
        seed = [seed + slot for slot in first]  # the seeds these slots would get in a full reset
    elif isinstance(seed, Sequence) and not isinstance(seed, (str, bytes)):
        planned = list(seed)[len(first):]
        seed = list(seed)[:len(first)]  # quarantined slots left fewer to reset: the first seeds, in order

    def starts(slots: list[int]) -> Generator[tuple[str, Any], Any, None]:
        """Start episodes on ``slots`` with the next planned seeds (then the slots' own)."""
        given, rest = slots[:len(planned)], slots[len(planned):]
        for batch, seeds in ((given, [planned.pop(0) for _ in given]), (rest, None)):
            if batch:
                observations, infos = yield "reset", (seeds, batch)
                for slot, observation, info in zip(batch, observations, infos):
                    reset_row(slot, observation, info)

    with _progress_bar(progress, num_episodes) as bar:
        observations, infos = yield "reset", (seed, first)
        for slot, observation, info in zip(first, observations, infos):
            reset_row(slot, observation, info)
        while len(ledger.finished) < num_episodes:
            acting = sorted(ledger.running)
            actions: list[str] = []
            acted: Any = None  # the acting slots' step results, when the driver stepped them as actions came
            if acting:
                asked = ([ledger.running[s].observation for s in acting], [ledger.running[s].info for s in acting],
                         [ledger.running[s].episode for s in acting])
                if streaming:
                    actions, acted = yield "act", (*asked, acting)
                else:
                    actions = _checked_actions((yield "policy", asked), len(acting))
            now = time.monotonic()
            retrying = sorted(slot for slot, failures in ledger.waiting.items() if failures.retry_at <= now)
            if planned and retrying:  # a planned seed starts on an explicit reset, not the slot's next seed
                yield from starts(retrying)
                retrying = []
                if not acting:
                    continue
            if not acting and not retrying:  # only slots in backoff: wait for the first of them
                yield "wait", max(0.0, min(f.retry_at for f in ledger.waiting.values()) - now)
                continue
            indices = acting + retrying
            if acted is None:
                rows = yield "step", (actions + [""] * len(retrying), indices)
            elif retrying:
                rows = _joined(acted, (yield "step", ([""] * len(retrying), retrying)))
            else:
                rows = acted
            cut_off: list[int] = []
            replays: list[tuple[int, int]] = []  # (slot, seed) of episodes lost with their host
            for slot, action, *row in zip(indices, actions + [None] * len(retrying), *rows):
                observation, reward, terminated, truncated, info = row
                if action is None:  # a slot waiting for its next episode
                    reset_row(slot, observation, info)
                    continue
                running = ledger.running[slot]
                if replay_lost and _host_lost(info):  # start it again, from its seed, where the slot lives now
                    ledger.running.pop(slot)
                    ledger.started -= 1
                    replays.append((slot, running.episode.seed))
                    continue
                ended = bool(terminated or truncated)
                if ended and FINAL_INFO in info:  # same-step autoreset: the row shows the next episode
                    turn_info, final = info[FINAL_INFO], info[FINAL_OBSERVATION]
                else:
                    turn_info, final = info, observation
                fault = info.get(FAULT) if FINAL_INFO not in info else None
                if ended and fault is not None and fault.get("phase") == "step":  # the environment failed it
                    running.episode.failure = Failure.from_fault(fault, len(running.episode.turns))
                running.episode.turns.append(Turn(running.observation, action, float(reward),
                                                  bool(terminated), bool(truncated), turn_info))
                if ended:
                    finish(slot, final, bar)
                    if not ledger.want_more():
                        continue
                    if planned:  # the next episode starts with its planned seed, on the next round
                        refill(slot)
                    elif EPISODE_SEED in info:  # same-step autoreset started the next episode
                        begin(slot, observation, info)
                    elif FAULT in info and info[FAULT].get("phase") == "reset":  # same-step reset failed
                        reset_failed(slot, info)
                    else:  # next-step autoreset: the next step resets
                        refill(slot)
                elif max_turns is not None and len(running.episode.turns) >= max_turns:
                    running.episode.turns[-1].truncated = True
                    finish(slot, observation, bar)
                    if ledger.want_more():
                        refill(slot)
                        cut_off.append(slot)
                else:
                    running.observation, running.info = observation, turn_info
            if cut_off:  # these environments still run the episode we cut off: reset them
                yield from starts(cut_off)
            while replays:
                slots, seeds = [slot for slot, _ in replays], [s for _, s in replays]
                observations, infos = yield "reset", (seeds, slots)
                again = []
                for slot, episode_seed, observation, info in zip(slots, seeds, observations, infos):
                    if _host_lost(info):
                        again.append((slot, episode_seed))
                    else:
                        reset_row(slot, observation, info)
                replays = again
    return [episode for _, episode in sorted(ledger.finished, key=lambda item: item[0])]


def _joined(first: tuple[Any, ...], second: tuple[Any, ...]) -> tuple[Any, ...]:
    """Two batched step results as one, ``first``'s rows first."""
    import numpy as np

    return tuple(list(a) + list(b) if isinstance(a, list) else np.concatenate([a, b]) for a, b in zip(first, second))


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

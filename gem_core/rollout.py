"""Collect complete episodes from a vector environment with any policy.

A policy is any callable that takes a list of observations and returns a list of actions (one
string each), or an awaitable of that list: an LLM client, a sampler, a scripted agent.

Exactly ``num_episodes`` episodes are started and each is collected when it ends, so no episode
is cut off or dropped (which would bias a batch towards short episodes): slots whose episode
ended sit idle once enough episodes have started. The slots used are reset at the start.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Generator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Union

from gem_core.episodes import Episode, Turn
from gem_core.errors import GemError

Policy = Callable[[list[str]], Union[Sequence[str], Awaitable[Sequence[str]]]]


def collect_episodes(vec_env: Any, policy: Policy, num_episodes: int, *, seed: int | Sequence[int] | None = None,
                     max_turns: int | None = None, max_reset_failures: int = 3,
                     progress: bool = False) -> list[Episode]:
    """Run ``policy`` on ``vec_env`` until ``num_episodes`` episodes have ended; return them in
    the order they started.

    ``policy`` may be synchronous or ``async`` (its coroutines run on the vector environment's
    event loop); from a coroutine, use :func:`acollect_episodes`. ``seed`` is passed to the
    initial ``vec_env.reset``. ``max_turns`` cuts an episode off (its last turn marked
    truncated) after that many turns. A slot whose environment fails to reset
    ``max_reset_failures`` times in a row raises :class:`~gem_core.GemError`. ``progress`` shows
    a progress bar.
    """
    steps = _collect(vec_env, num_episodes, seed, max_turns, max_reset_failures, progress)
    result: Any = None
    try:
        while True:
            kind, payload = steps.send(result)
            if kind == "reset":
                result = vec_env.reset(*payload)
            elif kind == "step":
                result = vec_env.step(*payload)
            else:
                result = policy(payload)
                if inspect.isawaitable(result):
                    result = vec_env.run_coroutine(_awaited(result))
    except StopIteration as stop:
        return stop.value


async def acollect_episodes(vec_env: Any, policy: Policy, num_episodes: int, *,
                            seed: int | Sequence[int] | None = None, max_turns: int | None = None,
                            max_reset_failures: int = 3, progress: bool = False) -> list[Episode]:
    """:func:`collect_episodes` for async callers: awaits the policy and the vector
    environment's ``areset``/``astep`` on the running loop."""
    steps = _collect(vec_env, num_episodes, seed, max_turns, max_reset_failures, progress)
    result: Any = None
    try:
        while True:
            kind, payload = steps.send(result)
            if kind == "reset":
                result = await vec_env.areset(*payload)
            elif kind == "step":
                result = await vec_env.astep(*payload)
            else:
                result = policy(payload)
                if inspect.isawaitable(result):
                    result = await result
    except StopIteration as stop:
        return stop.value


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


@dataclass
class _Running:
    order: int
    episode: Episode
    observation: str
    reset_failures: int = 0


@dataclass
class _Ledger:
    """Which slot runs which episode, and which slots wait for a new one."""

    target: int
    started: int = 0
    running: dict[int, _Running] = field(default_factory=dict)
    waiting: dict[int, int] = field(default_factory=dict)  # slot -> consecutive reset failures
    finished: list[tuple[int, Episode]] = field(default_factory=list)

    def want_more(self) -> bool:
        return self.started + len(self.waiting) < self.target


def _collect(vec_env: Any, num_episodes: int, seed: Any, max_turns: int | None, max_reset_failures: int,
             progress: bool) -> Generator[tuple[str, Any], Any, list[Episode]]:
    """The collection logic, as requests (``reset``, ``policy``, ``step``) for a driver."""
    from gem_core.vector.base import EPISODE_SEED, FAULT, FINAL_INFO, FINAL_OBSERVATION, VectorEnv

    if not isinstance(vec_env, VectorEnv):
        raise GemError("collect_episodes needs a vector environment (gem_core.make_vec), "
                       f"got {type(vec_env).__name__}.")
    for name, value in (("num_episodes", num_episodes), ("max_turns", max_turns),
                        ("max_reset_failures", max_reset_failures)):
        if value is None and name == "max_turns":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise GemError(f"{name} must be a positive integer, got {value!r}.")
    ledger = _Ledger(num_episodes)
    env_ids = vec_env.env_ids

    def begin(slot: int, observation: str, info: dict[str, Any]) -> None:
        ledger.waiting.pop(slot, None)
        episode = Episode(env_id=env_ids[slot], seed=info[EPISODE_SEED])
        ledger.running[slot] = _Running(ledger.started, episode, observation)
        ledger.started += 1

    def reset_failed(slot: int, info: dict[str, Any]) -> None:
        failures = ledger.waiting.get(slot, 0) + 1
        if failures >= max_reset_failures:
            fault = info.get(FAULT, {})
            raise GemError(f"Slot {slot} ({env_ids[slot]}) failed to reset {failures} times in a row; "
                           f"last: {fault.get('error') or fault.get('kind', 'unknown fault')}. "
                           "Fix the environment or raise max_reset_failures.")
        ledger.waiting[slot] = failures

    def finish(slot: int, final_observation: str, bar: Any) -> None:
        running = ledger.running.pop(slot)
        running.episode.final_observation = final_observation
        ledger.finished.append((running.order, running.episode))
        bar.advance(1)

    first = list(range(min(num_episodes, vec_env.num_envs)))
    with _progress_bar(progress, num_episodes) as bar:
        observations, infos = yield "reset", (seed, first)
        for slot, observation, info in zip(first, observations, infos):
            if EPISODE_SEED in info:
                begin(slot, observation, info)
            else:
                ledger.waiting[slot] = 0
                reset_failed(slot, info)
        while len(ledger.finished) < num_episodes:
            acting = sorted(ledger.running)
            actions: list[str] = []
            if acting:
                actions = _checked_actions((yield "policy", [ledger.running[s].observation for s in acting]),
                                           len(acting))
            retrying = sorted(ledger.waiting)
            indices = acting + retrying
            rows = yield "step", (actions + [""] * len(retrying), indices)
            cut_off: list[int] = []
            for slot, action, *row in zip(indices, actions + [None] * len(retrying), *rows):
                observation, reward, terminated, truncated, info = row
                if action is None:  # a slot waiting for its next episode
                    if EPISODE_SEED in info:
                        begin(slot, observation, info)
                    else:
                        reset_failed(slot, info)
                    continue
                running = ledger.running[slot]
                ended = bool(terminated or truncated)
                if ended and FINAL_INFO in info:  # same-step autoreset: the row shows the next episode
                    turn_info, final = info[FINAL_INFO], info[FINAL_OBSERVATION]
                else:
                    turn_info, final = info, observation
                running.episode.turns.append(Turn(running.observation, action, float(reward),
                                                  bool(terminated), bool(truncated), turn_info))
                if ended:
                    finish(slot, final, bar)
                    if not ledger.want_more():
                        continue
                    if EPISODE_SEED in info:  # same-step autoreset started the next episode
                        begin(slot, observation, info)
                    else:  # next-step autoreset, or a reset that failed: the next step resets
                        ledger.waiting[slot] = 0
                elif max_turns is not None and len(running.episode.turns) >= max_turns:
                    running.episode.turns[-1].truncated = True
                    finish(slot, observation, bar)
                    if ledger.want_more():
                        ledger.waiting[slot] = 0
                        cut_off.append(slot)
                else:
                    running.observation = observation
            if cut_off:  # these environments still run the episode we cut off: reset them
                observations, infos = yield "reset", (None, cut_off)
                for slot, observation, info in zip(cut_off, observations, infos):
                    if EPISODE_SEED in info:
                        begin(slot, observation, info)
                    else:
                        reset_failed(slot, info)
    return [episode for _, episode in sorted(ledger.finished, key=lambda item: item[0])]


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

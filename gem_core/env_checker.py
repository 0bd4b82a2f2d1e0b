"""Check an environment against GEM's environment contract.

:func:`check_env` (single-agent) and :func:`check_multiagent_env` play an environment with its
own random actions and with a battery of malformed ones, and check what every GEM environment
promises: the types of ``reset`` and ``step``, the same seed giving the same episode byte for
byte, per-instance randomness that leaves the global ``random``/``numpy.random`` state alone,
sampled actions that do not change the episode, any string answered with a valid transition,
``clone`` continuing identically and independently, ``close`` twice, ``step`` before ``reset``
a clear error, documented ``info`` keys well-typed, and episodes that end.

>>> from gem_core import check_env
>>> results = check_env("game:GuessTheNumber-v0-easy", steps=10)   # raises EnvCheckError on failure

With ``hacks=True`` they also play the reward-hacking probe (:mod:`gem_core.hacks`): every known
exploit, which must earn no more than honest plays that solve nothing. Each check is a
:class:`CheckResult`; ``gem check ENV_ID [--hacks]`` prints them as a report.
"""

from __future__ import annotations

import copy
import math
import random
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gem_core.core import BaseEnv, Env, require_single_agent
from gem_core.errors import GemError

#: Actions an LLM may write that no environment may fail on: empty, whitespace, control
#: characters, unicode, unbalanced markup of the answer formats GEM's packs parse, and huge text.
WEIRD_ACTIONS: tuple[str, ...] = (
    "", " ", "\n\n", "\x00\x01\x1b[31m", "é中文🙂\u200b\ufeff", "\\boxed{", "\\boxed{}", "}{", "\\boxed{\\boxed{}",
    "\\boxed{" + "\\boxed{" * 2000 + "}" * 1000, "<tool_call>{\"name\": ", "<python>", "```python\nprint(",
    "<bash>", "<search>", "\\boxed{" + "9" * 10_000 + "}", "x" * 200_000,
)

#: The ``info`` keys GEM's documentation gives a meaning to, and the type each must have.
INFO_KEY_TYPES: dict[str, type | tuple[type, ...]] = {
    "success": bool, "format_error": bool, "invalid_move": bool, "timed_out": bool, "correct": bool,
    "sandboxed": bool, "tool_error": bool, "suffix": str, "outcome": str, "agent": str, "seat": str,
    "error": str, "turn": int, "score": (int, float), "images": list, "rewards": dict,
}

#: Every check, in the order it runs: name -> what it checks.
CHECKS: dict[str, str] = {
    "step_before_reset": "step before reset is a clear error",
    "transitions": "reset and step return the documented types; sampled actions are well-formed",
    "info_keys": "documented info keys are well-typed",
    "global_random": "the global random and numpy.random state is left alone",
    "seeded_replay": "the same seed gives the same episode, byte for byte",
    "independent_instances": "instances do not share randomness",
    "sampling_apart": "sampling actions does not change the episode",
    "any_action": "any string gives a valid transition, never an exception",
    "clone": "clone() continues identically and independently",
    "episode_bound": "episodes end within max_episode_steps",
    "close_twice": "close() may be called twice",
    "declared_keys": "the files its pack declares as holding answers and tests exist",
}
#: The check that ``hacks=True`` adds.
HACKS_CHECK = {"reward_hacks": "no known exploit earns more than honest plays that solve nothing, or reads the answer"}


class EnvCheckError(GemError, AssertionError):
    """An environment broke its contract; ``results`` holds every check's :class:`CheckResult`."""

    def __init__(self, name: str, results: list[CheckResult]):
        self.results = results
        failed = [r for r in results if r.status == "failed"]
        lines = "\n".join(f"- {r.name} ({r.description}): {r.message}" for r in failed)
        super().__init__(f"{name} failed {len(failed)} check{'s' if len(failed) != 1 else ''}:\n{lines}")


class EnvCheckWarning(UserWarning):
    """Something the contract recommends but does not require (e.g. a ``GemError`` for ``step``
    before ``reset``), or a check that could not run."""


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome: ``status`` is ``"passed"``, ``"failed"``, ``"warning"`` or
    ``"skipped"``; ``message`` says what went wrong (empty when passed)."""

    name: str
    status: str
    message: str = ""
    seconds: float = 0.0
    details: tuple = ()  # reward_hacks: every attack's gem_core.hacks.HackResult

    @property
    def description(self) -> str:
        return CHECKS.get(self.name) or HACKS_CHECK[self.name]


class _Failure(Exception):
    """A broken contract, raised inside a check."""


class _Warning(Exception):
    """A recommendation not followed, raised inside a check."""


class _Skip(Exception):
    """A check that cannot run on what was given."""


def check_env(env: Env | str | Callable[[], Env], *, steps: int = 50, seed: int = 0,
              max_episode_steps: int = 1000, actions: Sequence[str] = WEIRD_ACTIONS,
              skip: Iterable[str] = (), warn: bool = True, hacks: bool = False,
              **make_kwargs: Any) -> list[CheckResult]:
    """Check a single-agent environment against GEM's environment contract.

    ``env`` is an environment id (made with ``make_kwargs``), a callable returning a new
    environment, or an environment (further instances are deep copies of it as it is now, and
    ``step_before_reset`` is skipped when it was already reset). ``steps`` is the length of the
    random-action transcripts compared, ``seed`` the seed they start from (``seed + 1`` is the
    other one), ``max_episode_steps`` the bound within which a random episode must end, ``actions``
    the malformed actions ``any_action`` steps with (default :data:`WEIRD_ACTIONS`); ``skip``
    names checks not to run (see :data:`CHECKS`). ``hacks`` adds ``reward_hacks``: the
    reward-hacking probe (:func:`gem_core.hacks.probe`) on seeds ``seed`` and ``seed + 1``, which
    fails when an exploit earns more than honest plays that solve nothing.

    Returns every check's :class:`CheckResult`; raises :class:`EnvCheckError` naming each failed
    check and how it failed. Recommendations not followed are :class:`EnvCheckWarning` warnings
    (unless ``warn`` is False) and ``"warning"`` results.
    """
    runner = _Runner(_factory(env, make_kwargs), _SingleAgent(), steps, seed, max_episode_steps, actions)
    if not isinstance(runner.main, Env):
        runner.close()
        require_single_agent(runner.main, "check_env")
    return runner.run(skip, warn, hacks)


def check_multiagent_env(env: BaseEnv | str | Callable[[], BaseEnv], *, steps: int = 50, seed: int = 0,
                         max_episode_steps: int = 1000, actions: Sequence[str] = WEIRD_ACTIONS,
                         skip: Iterable[str] = (), warn: bool = True, hacks: bool = False,
                         **make_kwargs: Any) -> list[CheckResult]:
    """Check a :class:`~gem_core.multiagent.MultiAgentEnv` against the contract, as
    :func:`check_env` does: ``reset`` returns an observation and an info per agent, ``step`` takes
    ``{agent: action}`` from the active agents (their ``random_action``, or malformed text) and
    returns five dicts keyed by agent, and every other check as for a single-agent environment.
    An episode ends when no agent is left; with ``hacks``, each seat attacks in turn."""
    from gem_core.multiagent import MultiAgentEnv

    runner = _Runner(_factory(env, make_kwargs), _MultiAgent(), steps, seed, max_episode_steps, actions)
    if not isinstance(runner.main, MultiAgentEnv):
        runner.close()
        raise GemError(f"{runner.name} is not a MultiAgentEnv: check it with check_env.")
    return runner.run(skip, warn, hacks)


def _factory(env: BaseEnv | str | Callable[[], BaseEnv],
             make_kwargs: dict[str, Any]) -> tuple[Callable[[], BaseEnv], bool]:
    """A maker of new instances, and whether they start un-reset."""
    if isinstance(env, str):
        from gem_core.registry import make

        make(env, **make_kwargs).close()  # an unknown id or keyword fails here, before any check
        return (lambda: make(env, **make_kwargs)), True
    if make_kwargs:
        raise GemError(f"check_env takes constructor keywords ({', '.join(make_kwargs)}) only with an id.")
    if isinstance(env, BaseEnv):
        snapshot = copy.deepcopy(env)
        return (lambda: copy.deepcopy(snapshot)), snapshot.unwrapped._rng is None
    if callable(env):
        return env, True
    raise GemError(f"check_env takes an environment, an id or a callable making one, not {type(env).__name__}.")


# --- Drivers: how a single-agent and a multi-agent environment are played -------------------------


class _SingleAgent:
    def reset(self, env: Env, seed: int | None) -> tuple[Any, list[dict]]:
        result = env.reset(seed=seed)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise _Failure(f"reset returned {_short(result)}, not a tuple (observation, info)")
        observation, info = result
        _expect(observation, str, "reset's observation")
        _expect(info, dict, "reset's info")
        return result, [info]

    def sample(self, env: Env) -> str:
        action = env.sample_random_action()
        _expect(action, str, "sample_random_action()")
        return action

    def weird(self, env: Env, text: str) -> str:
        return text

    def step(self, env: Env, action: str) -> tuple[Any, bool, list[dict]]:
        result = env.step(action)
        _check_transition(result, "step")
        return result, bool(result[2] or result[3]), [result[4]]


class _MultiAgent:
    def reset(self, env: Any, seed: int | None) -> tuple[Any, list[dict]]:
        result = env.reset(seed=seed)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise _Failure(f"reset returned {_short(result)}, not a tuple (observations, infos)")
        observations, infos = result
        for what, value in (("observations", observations), ("infos", infos)):
            _expect(value, dict, f"reset's {what}")
            if set(value) != set(env.agents):
                raise _Failure(f"reset's {what} are keyed by {sorted(value)}, not the agents {sorted(env.agents)}")
        for agent in env.agents:
            _expect(observations[agent], str, f"reset's observation of {agent}")
            _expect(infos[agent], dict, f"reset's info of {agent}")
        return result, list(infos.values())

    def sample(self, env: Any) -> dict[str, str]:
        actions = {agent: env.random_action(agent) for agent in env.active_agents}
        for agent, action in actions.items():
            _expect(action, str, f"random_action({agent!r})")
        return actions

    def weird(self, env: Any, text: str) -> dict[str, str]:
        return {agent: text for agent in env.active_agents}

    def step(self, env: Any, actions: dict[str, str]) -> tuple[Any, bool, list[dict]]:
        result = env.step(actions)
        if not (isinstance(result, tuple) and len(result) == 5):
            raise _Failure(f"step returned {_short(result)}, not five dicts")
        for what, value in zip(("observations", "rewards", "terminations", "truncations", "infos"), result):
            _expect(value, dict, f"step's {what}")
        observations, rewards, terminations, truncations, infos = result
        for agent in dict.fromkeys([*observations, *rewards, *terminations, *truncations, *infos]):
            _check_transition((observations.get(agent, ""), rewards.get(agent, 0.0), terminations.get(agent, False),
                               truncations.get(agent, False), infos.get(agent, {})), f"step (agent {agent!r})")
        return result, not env.agents, list(infos.values())


def _expect(value: Any, kind: type, what: str) -> None:
    if not isinstance(value, kind):
        raise _Failure(f"{what} is {_short(value)} ({type(value).__name__}), not a {kind.__name__}")


def _check_transition(result: Any, what: str) -> None:
    if not (isinstance(result, tuple) and len(result) == 5):
        raise _Failure(f"{what} returned {_short(result)}, not a tuple (observation, reward, terminated, truncated, info)")
    observation, reward, terminated, truncated, info = result
    _expect(observation, str, f"{what}'s observation")
    if isinstance(reward, bool) or not isinstance(reward, (int, float)):
        raise _Failure(f"{what}'s reward is {_short(reward)} ({type(reward).__name__}), not a float")
    if not math.isfinite(reward):
        raise _Failure(f"{what}'s reward is {reward}, not a finite number")
    _expect(terminated, bool, f"{what}'s terminated")
    _expect(truncated, bool, f"{what}'s truncated")
    _expect(info, dict, f"{what}'s info")


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- Transcripts ------------------------------------------------------------------------------------


def _fingerprint(value: Any) -> Any:
    """A comparable copy of what an environment returned: containers recursively, images and
    arrays by their bytes, and other objects by their type only (their equality may be identity)."""
    if value is None or isinstance(value, (str, bytes, bool, int, float)):
        return value
    if isinstance(value, dict):
        return {key: _fingerprint(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_fingerprint(item) for item in value]
    if hasattr(value, "tobytes"):  # PIL images, numpy arrays and scalars
        return (type(value).__name__, getattr(value, "mode", None), getattr(value, "size", None), value.tobytes())
    return f"<{type(value).__name__}>"


@dataclass
class _Transcript:
    entries: list[Any]
    actions: list[Any]
    infos: list[dict]  # of the resets and the steps
    step_infos: list[list[dict]] = field(default_factory=list)  # each step's, per agent


def _difference(first: _Transcript, second: _Transcript) -> str:
    """Where two transcripts part, in words."""
    for index, (a, b) in enumerate(zip(first.entries, second.entries)):
        if a != b:
            where = "the first reset" if index == 0 else f"entry {index} ({'a reset' if a[0] == 'reset' else 'a step'})"
            left, right = repr(a), repr(b)
            start = max(0, next((i for i, (x, y) in enumerate(zip(left, right)) if x != y), 0) - 30)
            return f"they differ at {where}: ...{left[start:start + 90]}... vs ...{right[start:start + 90]}..."
    return f"one has {len(first.entries)} entries, the other {len(second.entries)}"


# --- The checks -------------------------------------------------------------------------------------


class _Runner:
    def __init__(self, factory: tuple[Callable[[], BaseEnv], bool], driver: Any, steps: int, seed: int,
                 max_episode_steps: int, actions: Sequence[str]):
        self.make, self.fresh_unreset = factory
        self.actions = tuple(actions)
        self.driver, self.steps, self.seed, self.max_episode_steps = driver, steps, seed, max_episode_steps
        self.made: list[BaseEnv] = []
        self.main = self.new()
        self.name = self.main.spec.id if self.main.spec is not None else type(self.main.unwrapped).__name__

    def new(self) -> Any:
        """A new instance: an ``Env`` or a ``MultiAgentEnv``, played through the driver."""
        env = self.make()
        if not isinstance(env, BaseEnv):
            raise GemError(f"The environment to check is a {type(env).__name__}, not a gem_core.Env "
                           f"or gem_core.MultiAgentEnv.")
        self.made.append(env)
        return env

    def close(self) -> None:
        for env in self.made:
            try:
                env.close()
            except Exception:  # close_twice reports it
                pass
        self.made.clear()

    def run(self, skip: Iterable[str], warn: bool, hacks: bool = False) -> list[CheckResult]:
        skip = set(skip)
        unknown = skip - set(CHECKS)
        if unknown:
            raise GemError(f"Unknown check(s) {', '.join(sorted(unknown))}; the checks are {', '.join(CHECKS)}.")
        results = []
        try:
            for name in CHECKS:
                if name in skip:
                    results.append(CheckResult(name, "skipped", "skipped on request"))
                    continue
                results.append(self.run_one(name))
            if hacks:
                results.append(self.run_hacks())
        finally:
            self.close()
        if warn:
            for result in results:
                if result.status == "warning":
                    warnings.warn(f"{self.name}: {result.name}: {result.message}", EnvCheckWarning, stacklevel=3)
        if any(result.status == "failed" for result in results):
            raise EnvCheckError(self.name, results)
        return results

    def run_one(self, name: str) -> CheckResult:
        start = time.perf_counter()
        status, message = "passed", ""
        try:
            getattr(self, f"check_{name}")()
        except _Failure as e:
            status, message = "failed", str(e)
        except _Warning as e:
            status, message = "warning", str(e)
        except _Skip as e:
            status, message = "skipped", str(e)
        except Exception as e:
            status, message = "failed", f"raised {_raised(e)}"
        return CheckResult(name, status, message, time.perf_counter() - start)

    def run_hacks(self) -> CheckResult:
        from gem_core.hacks import probe

        start = time.perf_counter()
        try:
            found = tuple(probe(self.make, seeds=(self.seed, self.seed + 1)))
        except Exception as e:
            return CheckResult("reward_hacks", "failed", f"raised {_raised(e)}", time.perf_counter() - start)
        earned = [r for r in found if r.earned]
        unplayed = [r for r in found if r.error]
        status = "failed" if earned else "warning" if unplayed else "passed"
        message = "\n".join(r.describe() for r in earned or unplayed)
        return CheckResult("reward_hacks", status, message, time.perf_counter() - start, found)

    # Playing

    def play(self, env: BaseEnv, seed: int | None, actions: list[Any] | None = None, other: BaseEnv | None = None,
             steps: int | None = None) -> _Transcript:
        """``steps`` steps from ``reset(seed)``, with sampled actions or the given ones, resetting
        (without a seed) when an episode ends; with ``other``, a random step of it between steps."""
        steps = self.steps if steps is None else steps
        driver = self.driver
        reset, infos = driver.reset(env, seed)
        transcript = _Transcript([("reset", _fingerprint(reset))], [], list(infos))
        for turn in range(steps):
            action = driver.sample(env) if actions is None else actions[turn]
            result, done, infos = driver.step(env, action)
            transcript.actions.append(action)
            transcript.infos.extend(infos)
            transcript.step_infos.append(infos)
            transcript.entries.append(("step", _fingerprint(action), _fingerprint(result)))
            if done:
                reset, infos = driver.reset(env, None)
                transcript.infos.extend(infos)
                transcript.entries.append(("reset", _fingerprint(reset)))
            if other is not None and driver.step(other, driver.sample(other))[1]:
                driver.reset(other, None)
        return transcript

    def reference(self) -> _Transcript:
        """The main instance's transcript from the checked seed (played once)."""
        if not hasattr(self, "_reference"):
            self._reference = self.play(self.main, self.seed)
        return self._reference

    # Checks, in the order of CHECKS

    def check_step_before_reset(self) -> None:
        if not self.fresh_unreset:
            raise _Skip("the environment given was already reset; pass an id or a callable making new ones")
        env = self.new()
        try:
            action = self.driver.weird(env, "\\boxed{1}") if isinstance(self.driver, _SingleAgent) else {}
            env.step(action)
        except GemError as e:
            if "reset" not in str(e):
                raise _Warning(f"step before reset raised {_raised(e)}, which does not say to call reset") from None
            return
        except Exception as e:
            raise _Warning(f"step before reset raised {_raised(e)}; raise a gem_core.GemError that says to call "
                           f"reset first") from None
        raise _Failure("step before reset returned a transition instead of raising an error that says to call reset")

    def check_transitions(self) -> None:
        transcript = self.reference()
        for infos, action in zip(transcript.step_infos, transcript.actions):
            if any(info.get("format_error") is True for info in infos):
                raise _Failure(f"the sampled action {_short(action)} got info['format_error']: random actions must be "
                               f"well-formed")

    def check_info_keys(self) -> None:
        for info in self.reference().infos:
            for key, value in info.items():
                if not isinstance(key, str):
                    raise _Failure(f"info has the key {_short(key)} ({type(key).__name__}); info keys are strings")
                kind = INFO_KEY_TYPES.get(key)
                if kind is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
                    expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
                    raise _Failure(f"info[{key!r}] is {_short(value)} ({type(value).__name__}), documented as {expected}")

    def check_global_random(self) -> None:
        before = _global_random_state()
        env = self.new()
        self._fresh = self.play(env, self.seed)
        after = _global_random_state()
        if before[0] != after[0]:
            raise _Failure("making and playing the environment changed the global `random` state: draw from "
                           "self.rng (or self.action_rng for sampled actions) instead")
        if before[1] is not None and before[1] != after[1]:
            raise _Failure("making and playing the environment changed the global `numpy.random` state: draw "
                           "from self.np_random instead")

    def check_seeded_replay(self) -> None:
        first = self.reference()
        other = getattr(self, "_fresh", None) or self.play(self.new(), self.seed)
        if other.entries != first.entries:
            raise _Failure(f"reset(seed={self.seed}) on two instances gave two episodes; {_difference(first, other)}")
        same = self.play(self.main, self.seed + 1).entries == first.entries
        after = self.play(self.main, self.seed)
        if after.entries != first.entries:
            raise _Failure(f"reset(seed={self.seed}) on one instance gave another episode after episodes from seed "
                           f"{self.seed + 1} (reset must clear what the episodes before left); {_difference(first, after)}")
        if same and self.play(self.main, self.seed + 2).entries == first.entries:
            raise _Warning(f"seeds {self.seed}, {self.seed + 1} and {self.seed + 2} gave the same {self.steps} steps: does "
                           f"reset use its seed?")

    def check_independent_instances(self) -> None:
        alone = self.reference()
        other = self.new()
        self.driver.reset(other, self.seed + 1)
        together = self.play(self.new(), self.seed, other=other)
        if together.entries != alone.entries:
            raise _Failure(f"stepping another instance between its steps changed an episode (shared randomness or "
                           f"state); {_difference(alone, together)}")

    def check_sampling_apart(self) -> None:
        sampled = self.reference()
        replayed = self.play(self.new(), self.seed, actions=sampled.actions)
        if replayed.entries != sampled.entries:
            raise _Failure(f"replaying the sampled actions without sampling gave another episode: sample from "
                           f"self.action_rng, not self.rng; {_difference(sampled, replayed)}")

    def check_any_action(self) -> None:
        env, driver = self.main, self.driver
        driver.reset(env, self.seed)
        for text in self.actions:
            try:
                done = driver.step(env, driver.weird(env, text))[1]
            except _Failure as e:
                raise _Failure(f"the action {_short(text, 40)}: {e}") from None
            except Exception as e:
                raise _Failure(f"the action {_short(text, 40)} raised {_raised(e)}; any string must give a "
                               f"transition (a format-error penalty)") from None
            if done:
                driver.reset(env, None)

    def check_clone(self) -> None:
        env, driver = self.main, self.driver
        driver.reset(env, self.seed)
        if driver.step(env, driver.sample(env))[1]:
            driver.reset(env, None)
        first, second = env.clone(), env.clone()
        if first is env or second is first:
            raise _Failure("clone() returned the same object")
        if driver.sample(first) != driver.sample(env):
            raise _Failure("a clone samples another action than the original: clone() must copy the generators")
        driver.sample(second)  # the same draw, to stay level with the others
        original = self._continue(env)
        actions = original.actions
        copied = self._continue(first, actions)
        if copied.entries != original.entries:
            raise _Failure(f"a clone continued differently from the original; {_difference(original, copied)}")
        self.play(env, self.seed + 1, steps=3)
        self.play(first, self.seed + 1, steps=3)
        kept = self._continue(second, actions)
        if kept.entries != original.entries:
            raise _Failure(f"a clone changed when the original and another clone were stepped (shared state); "
                           f"{_difference(original, kept)}")

    def _continue(self, env: BaseEnv, actions: list[Any] | None = None) -> _Transcript:
        """Steps from where ``env`` is, until ``self.steps`` steps or the episode's end."""
        transcript = _Transcript([], [], [])
        for turn in range(self.steps if actions is None else len(actions)):
            action = self.driver.sample(env) if actions is None else actions[turn]
            result, done, _ = self.driver.step(env, action)
            transcript.actions.append(action)
            transcript.entries.append(("step", _fingerprint(action), _fingerprint(result)))
            if done:
                break
        return transcript

    def check_episode_bound(self) -> None:
        env, driver = self.main, self.driver
        driver.reset(env, self.seed)
        for _ in range(self.max_episode_steps):
            if driver.step(env, driver.sample(env))[1]:
                return
        raise _Failure(f"an episode of random actions did not end within {self.max_episode_steps} steps: give it a "
                       f"turn limit (truncated=True)")

    def check_close_twice(self) -> None:
        env = self.new()
        self.driver.reset(env, self.seed)
        env.close()
        env.close()

    def check_declared_keys(self) -> None:
        from gem_core.keys import key_files
        from gem_core.registry import declared_keys

        spec = self.main.unwrapped.spec
        if spec is None:
            return  # not made from a registered id: no pack declared anything for it
        for key in declared_keys(spec.source):
            try:
                key_files(key)
            except GemError as e:
                raise _Failure(str(e)) from None


def _raised(error: BaseException) -> str:
    """An exception and where it was raised, in one line."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    text = str(error)
    return f"{type(error).__name__}: {text if len(text) <= 200 else text[:197] + '...'}{where}"


def _global_random_state() -> tuple[Any, Any]:
    """The global ``random`` state, and ``numpy.random``'s when numpy is imported."""
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return random.getstate(), None
    _, keys, position, *_ = numpy.random.get_state()
    return random.getstate(), (keys.tobytes(), position)

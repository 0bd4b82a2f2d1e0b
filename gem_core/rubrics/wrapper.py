"""Rubric rewards on any environment: the ``rubric`` and ``judge`` wrappers.

:class:`RubricWrapper` (registered as ``rubric``) records the episode as it is played; each step's
reward becomes ``env_weight`` times the environment's reward, plus the weighted scores of the
rubric's turn criteria, plus, on the step that ends the episode, those of its episode criteria.
:func:`judge` (registered as ``judge``) is that wrapper with one criterion: an LLM judge.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gem_core.core import Env, ResetResult, StepResult, Wrapper
from gem_core.episodes import Episode, Turn
from gem_core.errors import GemError
from gem_core.rubrics.cache import JudgeCache
from gem_core.rubrics.judging import Judge
from gem_core.rubrics.rubric import EPISODE, Criterion, Rubric, RubricScore

#: What the ``judge`` wrapper asks when given no rubric.
DEFAULT_RUBRIC = ("The agent does what its task asks: its answers are correct, complete, and in the form "
                  "the task requires.")
#: The ``judge`` wrapper's options and their defaults (an option given as None takes its default).
JUDGE_DEFAULTS: dict[str, Any] = {
    "rubric": DEFAULT_RUBRIC, "model": None, "base_url": None, "api_key_env": "OPENAI_API_KEY", "scope": EPISODE,
    "weight": 1.0, "env_weight": 1.0, "max_score": 10, "fallback": 0.0, "timeout": 60.0, "max_retries": 2,
    "temperature": 0.0, "max_tokens": 512, "cache": True, "max_chars": 4000, "name": "judge",
}
#: The environment variable holding ``judge`` wrapper options as a JSON object, for command lines
#: such as ``gem eval --wrappers judge,concat_chat``, which name wrappers without options.
OPTIONS_VARIABLE = "GEM_JUDGE"


class RubricWrapper(Wrapper):
    """Rewards ``env``'s steps with ``rubric`` (a :class:`~gem_core.rubrics.rubric.Rubric`, or its
    criteria) on top of ``env_weight`` times the environment's own reward.

    Each step's ``info["rubric"]`` holds ``env_reward`` (the environment's reward), ``reward``
    (the step's reward) and ``parts``, the scores of the criteria that ran (see
    :meth:`~gem_core.rubrics.rubric.RubricScore.to_info`: a judge's part keeps its answer's
    ``text`` and its ``fault``). A step on which a judge ran also has ``info["judge_fault"]``,
    True when one failed (its part then scored its fallback).

    Put it innermost, before history wrappers such as ``concat_chat``: it records the
    observations the environment gave, and a judge reads them as they were.
    """

    def __init__(self, env: Env, rubric: Rubric | Iterable[Criterion | tuple[Any, ...]], *, env_weight: float = 1.0):
        super().__init__(env)
        if isinstance(env_weight, bool) or not isinstance(env_weight, (int, float)) or not math.isfinite(env_weight):
            raise GemError(f"env_weight must be a finite number, got {env_weight!r}.")
        self.rubric = rubric if isinstance(rubric, Rubric) else Rubric(rubric)
        self.env_weight = float(env_weight)
        self.episode: Episode | None = None  # the episode being played, as the rubric sees it
        self._observation = ""

    @property
    def blocking(self) -> bool:  # type: ignore[override]
        return self.env.blocking or self.rubric.judged

    def reset(self, seed: int | None = None, **options: Any) -> ResetResult:
        return self._started(seed, *self.env.reset(seed, **options))

    async def areset(self, seed: int | None = None, **options: Any) -> ResetResult:
        return self._started(seed, *await self.env.areset(seed, **options))

    def step(self, action: str) -> StepResult:
        result = self.env.step(action)
        turn, episode = self._record(action, result)
        return self._rewarded(result, self.rubric.score(turn), self.rubric.score(episode) if episode else None)

    async def astep(self, action: str) -> StepResult:
        result = await self.env.astep(action)
        turn, episode = self._record(action, result)
        if episode is None:
            return self._rewarded(result, await self.rubric.ascore(turn), None)
        turn_score, episode_score = await asyncio.gather(self.rubric.ascore(turn), self.rubric.ascore(episode))
        return self._rewarded(result, turn_score, episode_score)

    def _started(self, seed: int | None, observation: str, info: dict[str, Any]) -> ResetResult:
        env_id = self.spec.id if self.spec is not None else type(self.unwrapped).__name__
        self.episode, self._observation = Episode(env_id=env_id, seed=seed), observation
        return observation, info

    def _record(self, action: str, result: StepResult) -> tuple[Turn, Episode | None]:
        """The turn ``result`` completes, and the episode when it ended."""
        observation, reward, terminated, truncated, info = result
        if self.episode is None:
            self._started(None, "", {})
        assert self.episode is not None
        turn = Turn(self._observation, action, float(reward), bool(terminated), bool(truncated), info)
        self.episode.turns.append(turn)
        self._observation = observation
        if not (terminated or truncated):
            return turn, None
        self.episode.final_observation = observation
        return turn, self.episode

    def _rewarded(self, result: StepResult, turn: RubricScore, episode: RubricScore | None) -> StepResult:
        observation, env_reward, terminated, truncated, info = result
        parts = {**turn.parts, **(episode.parts if episode else {})}
        scored = RubricScore(parts)
        reward = self.env_weight * float(env_reward) + scored.total
        info["rubric"] = {"env_reward": float(env_reward), "reward": reward, "parts": scored.to_info()}
        if any(part.text is not None for part in parts.values()):
            info["judge_fault"] = bool(scored.faults)
        return observation, reward, terminated, truncated, info


def judge(env: Env, rubric: str | None = None, *, model: str | None = None, base_url: str | None = None,
          api_key_env: str | None = None, scope: str | None = None, weight: float | None = None,
          env_weight: float | None = None, max_score: int | None = None, fallback: float | None = None,
          timeout: float | None = None, max_retries: int | None = None, temperature: float | None = None,
          max_tokens: int | None = None, cache: JudgeCache | str | Path | bool | None = None,
          max_chars: int | None = None, name: str | None = None) -> RubricWrapper:
    """``env`` rewarded by an LLM judge: a :class:`RubricWrapper` whose one criterion, ``name``,
    is a :class:`~gem_core.rubrics.judging.Judge` of ``rubric`` scoring each episode (``scope``
    ``"episode"``, on its last step) or each turn (``"turn"``), times ``weight``, added to
    ``env_weight`` times the environment's reward. The other options are the judge's.

    An option left out (or None) is taken from ``$GEM_JUDGE``, a JSON object of these options,
    else from :data:`JUDGE_DEFAULTS`; ``model`` has no default.
    """
    given = {"rubric": rubric, "model": model, "base_url": base_url, "api_key_env": api_key_env, "scope": scope,
             "weight": weight, "env_weight": env_weight, "max_score": max_score, "fallback": fallback,
             "timeout": timeout, "max_retries": max_retries, "temperature": temperature, "max_tokens": max_tokens,
             "cache": cache, "max_chars": max_chars, "name": name}
    options = {**JUDGE_DEFAULTS, **_options_from_environment(),
               **{key: value for key, value in given.items() if value is not None}}
    if not options["model"]:
        raise GemError(f"The judge wrapper needs a judge model: give it model=NAME (and base_url=URL), or set "
                       f"{OPTIONS_VARIABLE}='{{\"model\": NAME, \"base_url\": URL}}'.")
    criterion_options = {key: options.pop(key) for key in ("name", "weight", "scope", "env_weight")}
    judge_model = Judge(**options)
    return RubricWrapper(env, [Criterion(criterion_options["name"], judge_model, criterion_options["weight"],
                                         criterion_options["scope"])], env_weight=criterion_options["env_weight"])


def _options_from_environment() -> dict[str, Any]:
    text = os.environ.get(OPTIONS_VARIABLE, "").strip()
    if not text:
        return {}
    try:
        options = json.loads(text)
    except json.JSONDecodeError as error:
        raise GemError(f"{OPTIONS_VARIABLE} is not valid JSON ({error.msg}): it holds the judge wrapper's options "
                       f"as an object, e.g. {{\"model\": NAME, \"base_url\": URL}}.") from None
    if not isinstance(options, dict):
        raise GemError(f"{OPTIONS_VARIABLE} must hold a JSON object of the judge wrapper's options, "
                       f"not {type(options).__name__}.")
    unknown = sorted(set(options) - set(JUDGE_DEFAULTS))
    if unknown:
        raise GemError(f"{OPTIONS_VARIABLE} names options the judge wrapper does not take: {', '.join(unknown)}; "
                       f"it takes: {', '.join(JUDGE_DEFAULTS)}.")
    return options

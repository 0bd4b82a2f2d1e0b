"""GEM adapters' environments in the ``gem`` registry (gem-llm 0.0.4) that ROLL's env managers call.

ROLL makes an environment with ``gem.make(env_id=custom_envs.<TAG>.env_type, **env_config)`` and
drives it with ``reset(seed=)``, ``step(action=)``, ``sample_random_action()`` and ``close()``.
:func:`register_envs` registers every GEM adapters id there as ``gem_adapters/<id>``; the
registered entry point is :class:`RollEnv`, which plays one GEM adapters environment through
:class:`~gem_adapters.common.session.EnvSession` and answers in the shapes ROLL reads:

* ``env_config`` holds the environment's own constructor keywords, plus optionally a ``gem``
  section (``wrappers``, ``max_turns``: the adapters' episode options, checked) and ``seed`` (the
  seed of resets without one; ROLL sets it to the group's seed).
* ``reset`` returns the first observation, with ``info["env_instruction"]`` set to it (ROLL's
  ``StepEnvManager`` reads that key; GEM environments state their task in the first observation).
* ``step`` returns ``terminated`` True whenever the episode is over, since ROLL's env managers end
  an episode only on ``terminated``; ``truncated`` then says it was cut short (the environment's
  own limit, ``max_turns``, or a failed episode: logged, never raised).
* ``info`` holds only what ROLL and GEM's env managers read, since ROLL merges it into its own
  per-step records: ``use_tool`` (a tool answered, so ``TrajEnvManager`` sends the observation as
  a tool message), ``metrics`` (the numeric values of the GEM info, and the episode so far as
  ``gem_turns``, ``gem_terminated``, ``gem_success``, ``gem_format_error``, ``gem_failed`` and
  ``gem_failed_<kind>``, see :meth:`~gem_adapters.common.session.EnvSession.metrics`),
  ``metrics_agg_mode`` (ROLL aggregates each metric over the episode's steps, the mean, or
  ``last`` for the ``gem_`` numbers, so that they are the episode's, and logs it as
  ``env/<tag>/<key>``) and ``gem_failure`` (the failure's kind once the episode failed, else
  ``""``), which GEM's env managers put on the episode's step samples
  (:mod:`gem_adapters.roll.env_managers`).

A failed episode (its environment broke, or ``gem.episode_deadline`` passed) ends at the step
that failed, with reward 0 and its environment closed; the next reset makes a fresh one. ROLL
generates on its own between steps, so a deadline that passes while ROLL generates ends the
episode at the next step.
"""

from __future__ import annotations

import asyncio
from numbers import Real
from typing import Any

from gem_adapters.common.options import EpisodeOptions
from gem_adapters.common.session import EnvSession
from gem_adapters.roll import PREFIX
from gem_core.errors import GemError, MissingDependencyError

ENTRY_POINT = "gem_adapters.roll.rollout:RollEnv"
#: The key of a step's info, and of a step sample's non-tensor fields, that holds the failure kind.
FAILURE_KEY = "gem_failure"


def gem_module() -> Any:
    try:
        import gem
    except ImportError:
        raise MissingDependencyError("The ROLL bridge", "gem", "roll") from None
    return gem


def roll_env_id(env_id: str) -> str:
    """The id under which ROLL finds GEM adapters' environment ``env_id``."""
    return PREFIX + env_id


def register_envs() -> int:
    """Register every GEM adapters id (built-in and plugins) in the ``gem`` registry, prefixed;
    ids already there are kept. Returns how many were added. Safe to call in every process."""
    from gem_core import list_envs

    gem = gem_module()
    from gem.envs.registration import ENV_REGISTRY

    added = 0
    for spec in list_envs():
        roll_id = roll_env_id(spec.id)
        if roll_id not in ENV_REGISTRY:
            gem.register(roll_id, entry_point=ENTRY_POINT, gem_env_id=spec.id)
            added += 1
    return added


def _base_class() -> type:
    try:
        return gem_module().Env
    except MissingDependencyError:
        return object  # the module still imports; making an environment then names the fix


class RollEnv(_base_class()):  # type: ignore[misc]
    """One GEM adapters environment as ROLL's env managers drive it (see the module docs)."""

    def __init__(self, gem_env_id: str, gem: Any = None, seed: int | None = None, **env_kwargs: Any):
        options = EpisodeOptions.from_config(gem, where=f"the `gem` section of {roll_env_id(gem_env_id)}'s env_config")
        if options.max_tokens_per_turn is not None:
            raise GemError("ROLL caps each generation itself: set custom_envs.<TAG>.max_tokens_per_step "
                           "instead of gem.max_tokens_per_turn in the env_config.")
        self.gem_env_id, self.default_seed = gem_env_id, seed
        self._loop = asyncio.new_event_loop()  # one per environment: async envs keep their loop
        self._session = EnvSession.start(gem_env_id, seed, options, **env_kwargs)

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        self._session.seed = self.default_seed if seed is None else int(seed)
        observation = self._run(self._session.reset())
        return observation, {"env_instruction": observation, "use_tool": False, "metrics": {}}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        outcome = self._run(self._session.step(action))
        episode = {f"gem_{key}": value for key, value in self._session.metrics().items()}
        failure = self._session.failure
        info = {
            "use_tool": bool(outcome.info.get("use_tool", False)),
            "metrics": {**numeric_values(outcome.info), **episode},
            "metrics_agg_mode": dict.fromkeys(episode, "last"),  # the episode's numbers at its end
            FAILURE_KEY: "" if failure is None else failure.kind,
        }
        return outcome.observation, outcome.reward, outcome.done, outcome.done and not self._session.terminated, info

    def sample_random_action(self) -> str:
        return self._session.env.sample_random_action()

    @property
    def session(self) -> EnvSession:
        """The episode being played (its rewards, and why it stopped)."""
        return self._session

    def close(self) -> None:
        if not self._loop.is_closed():
            self._session.close()
            self._loop.close()

    def _run(self, coroutine: Any) -> Any:
        return self._loop.run_until_complete(coroutine)

    def __repr__(self) -> str:
        return f"<RollEnv {self.gem_env_id}>"


def numeric_values(info: dict[str, Any]) -> dict[str, float]:
    """The numbers (and booleans) of a GEM info dict, as floats."""
    return {key: float(value) for key, value in info.items()
            if isinstance(value, (Real, bool)) and not isinstance(value, complex)}

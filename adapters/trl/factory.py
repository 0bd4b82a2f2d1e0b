"""GEM environments through TRL's own environment path: ``GRPOTrainer(environment_factory=...)``.

TRL makes one environment object per rollout, calls ``reset(**row)`` with the dataset row and
appends what it returns to the prompt's last user message, shows the model the object's public
methods as tools, and runs the multi-turn tool loop itself with the model's chat template. At the
end it scores the rollout with ``get_reward()`` (TRL 1.8 and later) or with reward functions,
which receive the environment objects as ``environments``.

:func:`environment_factory` makes such a class for any GEM environment id:

* ``act(action)`` plays one turn: the action goes to the environment and the next observation
  comes back as the tool's answer (the final one, with the episode's end, when the environment
  ends it). A text environment offers only this tool.
* An environment with GEM tool wrappers (the ``+Tool`` ids, ``python_tool``, ``search_tool``,
  MCP) also offers each tool's functions (:meth:`gem_core.tools.Tool.functions`) under their own
  names and schemas (:mod:`~gem_adapters.trl.tool_functions`); a call steps the environment with
  the text the GEM tool reads (:meth:`~gem_core.tools.Tool.call_text`), so the wrapper's budget, rewards and info apply as in-process. The wrappers' text
  instructions are left out of the first observation: the schemas describe the tools.
* ``reset`` plays the row's ``env_id`` (when the row has one, it must be the factory's) with its
  ``seed``; ``get_reward`` returns the episode's return, the undiscounted sum of its turns'
  rewards; ``info`` holds the per-turn rewards, why the episode stopped and whether it was won.

An environment that fails (at reset or at a step), or an episode past ``episode_deadline``, fails
that episode, as :class:`~gem_adapters.common.session.EnvSession` says, and the batch goes on; a
tool call with wrong arguments raises a ``TypeError`` that TRL shows the model, and the episode
goes on. Once the episode is over, further calls answer that it is over and change nothing. A
failed episode's reward is None (``info["failure"]`` says why): TRL 1.16 leaves a completion
whose every reward is None out of its reward statistics and group baselines and gives it
advantage 0, so with ``beta`` 0 none of its tokens trains; TRL before that sums rewards with
``nansum``, which counts it as 0. TRL runs the tool loop, so a deadline that passes while TRL
generates ends the episode at its next tool call.

.. code-block:: python

    from trl import GRPOConfig, GRPOTrainer
    from gem_adapters.trl import environment_factory

    trainer = GRPOTrainer(model="Qwen/Qwen3-0.6B", args=GRPOConfig(...), train_dataset=rows,
                          environment_factory=environment_factory("game:GuessTheNumber-v0-easy"))

``rows`` hold a ``prompt`` (a user message that the first observation is appended to) and the
``env_id`` and ``seed`` to play; ``gem trl config --mode factory`` writes them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import math
import re
import weakref
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, ClassVar

from gem_adapters.common.options import EpisodeOptions
from gem_adapters.common.session import EnvSession
from gem_adapters.trl.tool_functions import as_method
from gem_adapters.trl.versions import check_factory_trl, has_environment_reward
from gem_core.errors import GemError
from gem_core.tools.actions import action_text, tool_wrappers

#: The tool that plays a turn.
ACTION_TOOL = "act"


class GemEnvironment:
    """One GEM episode at a time, as TRL's ``environment_factory`` objects are; see the module
    documentation. :func:`environment_factory` makes the subclass for an environment id."""

    env_id: ClassVar[str] = ""
    options: ClassVar[EpisodeOptions] = EpisodeOptions()
    env_kwargs: ClassVar[Mapping[str, Any]] = {}

    def __init__(self) -> None:
        self._session: EnvSession | None = None
        #: The episode so far: ``env_id``, ``seed``, ``turn_rewards``, ``stop`` (None while it goes
        #: on, else why it ended), ``success`` (won, as ``gem train`` counts it), ``error`` and
        #: ``failure`` (kind, error, phase, turn; None unless it failed).
        self.info: dict[str, Any] = {}

    def reset(self, **row: Any) -> str:
        """Start the row's episode (its ``env_id`` and ``seed``) and return its first observation."""
        env_id = row.get("env_id")
        if env_id is not None and env_id != self.env_id:
            raise GemError(f"A dataset row names the environment {env_id!r}, but this factory plays {self.env_id!r}. "
                           "Give environment_factory every id the rows name (it then returns TRL's dict of "
                           "factories, and each row's 'environment' column picks one).")
        seed = row.get("seed")
        seed = None if seed is None else int(seed)
        if self._session is None:
            self._session = EnvSession.start(self.env_id, seed, self.options, **self.env_kwargs)
            for wrapper in tool_wrappers(self._session.env):
                wrapper.add_instructions = False  # the tools' schemas describe them
            weakref.finalize(self, self._session.close)
        self._session.seed = seed
        observation = _run(self._session.reset())
        self.info = {"env_id": self.env_id, "seed": seed, "turn_rewards": [], "stop": self._session.stop,
                     "success": False, "error": self._session.error, "failure": failure_record(self._session)}
        return observation

    def act(self, action: str) -> str:
        """Take your turn: your move, guess or answer, written as the task asks. What the
        environment answers comes back.

        Args:
            action: Your move, guess or answer, exactly as the task asks for it.
        """
        if not isinstance(action, str):
            raise TypeError(f"act() argument 'action' must be a string, not {type(action).__name__}")
        return self._play(action)

    def _play(self, action: str) -> str:
        """Step the episode with ``action`` (a turn, or a tool call in the text its tool reads)."""
        session = self._session
        if session is None:
            raise GemError("The environment was called before reset(); TRL resets it with a dataset row first.")
        if session.stop is not None:
            return f"The episode is over ({session.stop}); nothing more can be done in it."
        outcome = _run(session.step(action))
        self.info.update(turn_rewards=list(session.rewards), stop=session.stop, error=session.error,
                         success=session.success, failure=failure_record(session))
        return outcome.observation

    def _call_tool(self, function: str, arguments: dict[str, Any]) -> str:
        """A tool function's call: the action text that calls it (arguments that do not fit raise a
        :class:`~gem_core.tools.ToolArgumentError` for the model), played when a tool wrapper takes
        it, else refused (the tool budget is spent) without a turn."""
        session = self._session
        if session is None or session.stop is not None:
            return self._play("")
        action = action_text(session.env, function, arguments)
        if not any(wrapper.find_call(action) for wrapper in tool_wrappers(session.env)):
            from gem_core.tools.wrapper import BUDGET_SPENT

            return BUDGET_SPENT
        return self._play(action)

    @property
    def episode_return(self) -> float | None:
        """The undiscounted sum of the episode's rewards so far; None when it failed."""
        if self._session is None:
            return 0.0
        return None if self._session.failure is not None else math.fsum(self._session.rewards)


def failure_record(session: EnvSession) -> dict[str, Any] | None:
    """The session's failure as plain data (None when it did not fail)."""
    return None if session.failure is None else dataclasses.asdict(session.failure)


class EnvironmentReward:
    """``get_reward`` for TRL 1.8 and later. On older TRL every public method is a tool, so the
    classes there leave it out and :func:`environment_return` scores the episodes."""

    def get_reward(self) -> float | None:
        """The episode's return: the undiscounted sum of its turns' rewards; None when the episode
        failed (TRL then leaves it out)."""
        return self.episode_return  # type: ignore[attr-defined]


def environment_return(environments: Sequence[Any] | None = None, **_unused: Any) -> list[float | None]:
    """TRL reward function for TRL 0.29 to 1.7 (which have no ``get_reward``): each rollout's
    episode return (None for a failed one). Later TRL calls ``get_reward`` itself; leave this out
    there."""
    if not environments:
        raise GemError("environment_return scores GEM environments: use it with "
                       "GRPOTrainer(environment_factory=gem_adapters.trl.environment_factory(...)).")
    if any(hasattr(env, "get_reward") for env in environments):
        raise GemError("This TRL calls each environment's get_reward itself; passing environment_return as well "
                       "would count every return twice. Leave it out of reward_funcs.")
    return [env.episode_return for env in environments]


def environment_factory(env_ids: str | Sequence[str] | Mapping[str, str], *, options: EpisodeOptions | None = None,
                        **env_kwargs: Any) -> type[GemEnvironment] | dict[str, type[GemEnvironment]]:
    """What ``GRPOTrainer(environment_factory=...)`` takes, for GEM environments.

    ``env_ids``: one id gives one class; several (a list, or a mapping of TRL's environment names
    to ids) give TRL's ``{name: class}`` form (TRL 1.8 and later), each row's ``environment``
    column picking its class (a list's names are the ids). ``options``: GEM wrappers and
    ``max_turns`` (:class:`~gem_adapters.common.options.EpisodeOptions`). ``env_kwargs`` go to
    every environment's constructor. An unknown id, keyword or wrapper raises
    :class:`~gem_core.GemError` here, before any training starts.
    """
    version = check_factory_trl()
    options = options or EpisodeOptions()
    with_reward = has_environment_reward(version)
    if isinstance(env_ids, str):
        return environment_class(env_ids, options, env_kwargs, with_reward=with_reward)
    named = dict(env_ids) if isinstance(env_ids, Mapping) else {env_id: env_id for env_id in env_ids}
    if not named:
        raise GemError("environment_factory needs at least one environment id.")
    if not with_reward:
        raise GemError(f"TRL {version} takes one environment factory; several environments need TRL 1.8 or later "
                       "(its dict of factories). Train on one id, or upgrade TRL.")
    return {name: environment_class(env_id, options, env_kwargs, with_reward=True) for name, env_id in named.items()}


def environment_class(env_id: str, options: EpisodeOptions, env_kwargs: Mapping[str, Any], *,
                      with_reward: bool) -> type[GemEnvironment]:
    """The :class:`GemEnvironment` subclass of ``env_id``: one environment is made (and closed) to
    read its tools."""
    probe = EnvSession.start(env_id, None, options, **env_kwargs)
    try:
        functions = [function for wrapper in tool_wrappers(probe.env) for function in wrapper.functions()]
    finally:
        probe.close()
    namespace: dict[str, Any] = {"env_id": env_id, "options": options, "env_kwargs": dict(env_kwargs),
                                 "__doc__": f"The GEM environment {env_id} for TRL's environment_factory."}
    for function in functions:
        if function.name in namespace or function.name == ACTION_TOOL:
            raise GemError(f"Two tools of {env_id} are called {function.name!r} (or one is called like the "
                           f"action, {ACTION_TOOL!r}); TRL calls tools by name, so each needs its own.")
        namespace[function.name] = as_method(function, GemEnvironment._call_tool)
    bases = (GemEnvironment, EnvironmentReward) if with_reward else (GemEnvironment,)
    return type(re.sub(r"\W", "_", env_id), bases, namespace)


def _run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a session's coroutine to its end from synchronous code (TRL calls tools synchronously),
    in a thread of its own when this one already runs an event loop (a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()

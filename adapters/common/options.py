"""How an adapter plays each environment: the ``gem`` section of a library's config.

.. code-block:: yaml

    gem:
      wrappers: [episode_tracking]   # GEM wrappers, innermost first (a list or a comma string)
      max_turns: null                # stop after this many model turns (null: the env's own limit)
      max_tokens_per_turn: null      # cap on one generation (null: what is left of the budget)
      env_pool: null                 # play on a Ray pool of environment hosts instead of in-process,
                                     # e.g. {address: auto, hosts: 4} (see gem_core.vector.ray_pool)
      episode_deadline: null         # seconds of wall clock per episode (null: none)

The library's own response length is the token budget of a whole episode: every model turn and
every observation in between.

``episode_deadline`` bounds an episode's wall clock from its reset on, environment and sampling
time together: past it the episode ends failed (kind ``"deadline"``), its environment is closed
(a sandbox it runs dies with it) and the next episode gets a fresh one (see
:mod:`gem_adapters.common.session`).

An adapter's ``gem_agent`` loop (verl's, :mod:`gem_adapters.verl.harness`) reads a section of its
own, ``gem_agent`` (:class:`AgentOptions`): ``program`` (``module:function`` or a command) and
``timeout`` (seconds a run may take, 600 by default).

``env_pool`` takes the options of :class:`gem_core.vector.ray_pool.RayPool` (``address``,
``hosts``, ``slots_per_host``, ``resource``, ``name``, ``start_timeout``, ``call_timeout``); its
``name`` defaults to ``"gem"``, so that every rollout worker leases slots from one shared pool.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gem_core.errors import GemError

#: Observation wrappers that repeat the episode so far in each observation. Adapters keep the whole
#: conversation in the model's context, so with these the model would read its history twice.
HISTORY_WRAPPERS = frozenset({"concat", "concat_with_action", "concat_chat", "concat_chat_on_reset"})
#: The keys of the ``gem`` section.
KEYS = ("wrappers", "max_turns", "max_tokens_per_turn", "env_pool", "episode_deadline")


@dataclass(frozen=True)
class EpisodeOptions:
    """Validated contents of the ``gem`` config section."""

    wrappers: tuple[str, ...] = ()
    max_turns: int | None = None
    max_tokens_per_turn: int | None = None
    env_pool: Mapping[str, Any] | None = None
    episode_deadline: float | None = None

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None, *, where: str = "the `gem` section",
                    history_in_context: bool = True) -> EpisodeOptions:
        """Read and check a ``gem`` section (a dict or an OmegaConf node; None for defaults).
        ``where`` names the section in error messages (e.g. "the `gem` section of the verl config").
        ``history_in_context=False`` is for libraries that prompt each turn with its observation
        alone (oat): there the history wrappers are how the model sees the episode so far."""
        section = dict(section or {})
        unknown = sorted(set(section) - set(KEYS))
        if unknown:
            raise GemError(
                f"Unknown key(s) {', '.join(map(repr, unknown))} in {where}; "
                f"the accepted keys are {', '.join(map(repr, KEYS[:-1]))} and {KEYS[-1]!r}."
            )
        return cls(
            wrappers=parse_wrappers(section.get("wrappers"), history_in_context=history_in_context),
            max_turns=_positive_or_none(section.get("max_turns"), "gem.max_turns"),
            max_tokens_per_turn=_positive_or_none(section.get("max_tokens_per_turn"), "gem.max_tokens_per_turn"),
            env_pool=parse_env_pool(section.get("env_pool")),
            episode_deadline=parse_deadline(section.get("episode_deadline"), "gem.episode_deadline"),
        )

    def to_config(self) -> dict[str, Any]:
        return {"wrappers": list(self.wrappers), "max_turns": self.max_turns,
                "max_tokens_per_turn": self.max_tokens_per_turn,
                "env_pool": None if self.env_pool is None else dict(self.env_pool),
                "episode_deadline": self.episode_deadline}


#: The keys of the ``gem_agent`` section.
AGENT_KEYS = ("program", "timeout")
AGENT_TIMEOUT = 600.0


@dataclass(frozen=True)
class AgentOptions:
    """Validated contents of the ``gem_agent`` config section: the agent program an adapter's
    ``gem_agent`` loop runs per episode (``module:function`` or a command) and how long a run may
    take (seconds)."""

    program: Any
    timeout: float = AGENT_TIMEOUT

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None) -> AgentOptions:
        section = dict(section or {})
        unknown = sorted(set(section) - set(AGENT_KEYS))
        if unknown:
            raise GemError(f"Unknown key(s) {', '.join(map(repr, unknown))} in the `gem_agent` section; the accepted keys are {AGENT_KEYS[0]!r} and {AGENT_KEYS[1]!r}.")
        program = section.get("program")
        if isinstance(program, str):
            program = program.strip()
        elif program is not None:
            program = [str(word) for word in program]  # a command as a list (OmegaConf's ListConfig)
        if not program:
            raise GemError("The gem_agent loop needs gem_agent.program: 'module:function' or a command "
                           "(`gem verl config --agent PROGRAM` writes it).")
        timeout = parse_deadline(section.get("timeout", AGENT_TIMEOUT), "gem_agent.timeout")
        return cls(program, AGENT_TIMEOUT if timeout is None else timeout)


def parse_wrappers(value: Any, *, history_in_context: bool = True) -> tuple[str, ...]:
    """Wrapper names from a comma string or a list; each must be registered with GEM and, when the
    library keeps the conversation in the model's context (``history_in_context``), must not
    repeat it."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        names = [part.strip() for part in value.split(",") if part.strip()]
    elif isinstance(value, (list, tuple)) or type(value).__name__ == "ListConfig":
        names = [str(part).strip() for part in value]
    else:
        raise GemError(f"gem.wrappers must be a list of wrapper names or a comma string, not {value!r}.")
    from gem_core.registry import WRAPPERS

    for name in names:
        if history_in_context and name in HISTORY_WRAPPERS:
            raise GemError(
                f"Wrapper {name!r} repeats the episode so far in every observation, but the adapter "
                "already keeps the whole conversation in the model's context. Remove it from "
                "gem.wrappers."
            )
        WRAPPERS.component(name)  # an unknown name raises, naming the closest ones
    return tuple(names)


def parse_env_pool(value: Any) -> dict[str, Any] | None:
    """The checked options of ``gem.env_pool`` (None: play in-process); ``name`` defaults to
    ``"gem"``. Ray itself is not imported."""
    if value is None:
        return None
    if not hasattr(value, "items"):
        raise GemError(f"gem.env_pool must be a mapping of Ray pool options (e.g. {{address: auto}}) or null, "
                       f"not {value!r}.")
    from gem_core.vector.ray_pool import RayPool

    options = {"name": "gem", **{str(k): v for k, v in dict(value).items()}}
    try:
        RayPool.of(options)
    except GemError as e:
        raise GemError(f"gem.env_pool: {e}") from None
    return options


def parse_deadline(value: Any, key: str) -> float | None:
    """A deadline in seconds: a positive finite number, or None for none."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise GemError(f"{key} must be a positive number of seconds, not {value!r} (leave it out for no deadline).")
    return float(value)


def _positive_or_none(value: Any, key: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise GemError(f"{key} must be a positive integer or null, not {value!r}.")
    return value

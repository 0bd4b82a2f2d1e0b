"""The environment and wrapper base classes: :class:`Env` (one agent), :class:`BaseEnv` (what it
shares with :class:`~gem_core.multiagent.MultiAgentEnv`), :class:`Wrapper`, and
:class:`ResultWrapper` for wrappers that rewrite what the inner environment returns, and
:func:`wrapper_stack`, the layers of a wrapped environment.

An environment is a multi-turn text task: ``reset`` returns the first observation, ``step``
takes whatever the LLM wrote and returns the next observation with a reward. Both are strings in,
strings out, so any environment works with any model and any training library.
"""

from __future__ import annotations

import copy
import functools
import random
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from gem_core.errors import SingleAgentRequiredError

if TYPE_CHECKING:
    from typing import Self  # Python 3.11; annotations are not evaluated at run time

    import numpy as np

    from gem_core.envspec import EnvSpec
    from gem_core.vector.starts import StartLimit

ResetResult = tuple[str, dict[str, Any]]
StepResult = tuple[str, float, bool, bool, dict[str, Any]]


class BaseEnv:
    """What every environment shares, single-agent (:class:`Env`) or multi-agent
    (:class:`~gem_core.multiagent.MultiAgentEnv`): the spec it was made from, per-instance
    generators seeded by ``reset(seed)``, ``clone``, ``close`` and use as a context manager.

    The two kinds are apart, as PettingZoo keeps its multi-agent bases apart from Gymnasium's
    ``Env``: their ``reset`` and ``step`` take and return different things, so code written for
    one kind takes only that kind (``isinstance(env, Env)``).
    """

    #: Set by :func:`gem_core.make` to the spec the environment was made from.
    spec: EnvSpec | None = None
    #: True when ``step``/``reset`` wait on I/O (subprocesses, servers, sleeps). Vector
    #: environments in async mode run such steps concurrently in worker threads and run the
    #: others inline, so cheap CPU-bound environments never pay a thread hop. A class that does
    #: not set it has its first calls timed instead (see :mod:`gem_core.vector.execution`).
    blocking: ClassVar[bool] = False
    #: A limit on how many environments like this one start (``reset``) at once, or per second,
    #: for environments whose reset is heavy (a container, a VM); vector environments hold each
    #: reset until the limit allows (see :mod:`gem_core.vector.starts`). None: no limit.
    start_limit: ClassVar[StartLimit | None] = None

    #: Whether the first calls of a subclass's :attr:`_watched_methods` (where it defines them)
    #: are watched for draws from the global ``random``/``numpy.random`` state (see
    #: :class:`GlobalRandomWarning`).
    _watch_global_random: ClassVar[bool] = True
    _watched_methods: ClassVar[tuple[str, ...]] = ("reset", "step")

    _seed: int | None = None
    _rng: random.Random | None = None
    _np_rng: np.random.Generator | None = None
    _action_rng: random.Random | None = None

    def __init_subclass__(cls, watched: bool = True, **kwargs: Any) -> None:
        """``watched=False`` marks a base class whose own methods draw nothing (its subclasses'
        methods are watched)."""
        super().__init_subclass__(**kwargs)
        if cls._watch_global_random and watched:
            for name in cls._watched_methods:
                if name in cls.__dict__:
                    setattr(cls, name, _watched_once(cls, name, cls.__dict__[name]))

    def _reseed(self, seed: int | None) -> None:
        """Seed the generators for a new episode: from ``seed``, or afresh on the first episode;
        without a seed later episodes continue the generators, so they differ."""
        if seed is not None or self._rng is None:
            self._seed_generators(seed)

    def clone(self) -> Self:
        """An independent copy of this environment, in the same state, generators included.
        The default deep-copies it; environments holding processes or connections override it."""
        return copy.deepcopy(self)

    def close(self) -> None:
        """Release resources (processes, connections). Safe to call more than once."""

    @property
    def rng(self) -> random.Random:
        """The per-instance Python generator, seeded by ``reset(seed)``."""
        if self._rng is None:
            self._seed_generators(None)
        return self._rng  # type: ignore[return-value]

    @property
    def np_random(self) -> np.random.Generator:
        """The per-instance numpy generator, seeded from the same seed as :attr:`rng`."""
        if self._np_rng is None:
            import numpy as np

            if self._rng is None:
                self._seed_generators(None)
            self._np_rng = np.random.default_rng(self._seed)
        return self._np_rng

    @property
    def action_rng(self) -> random.Random:
        """The generator behind random actions: seeded from the same seed as :attr:`rng` but
        apart from it (as Gymnasium seeds an action space apart from its environment), so an
        episode is the same whether its actions were sampled or given."""
        return self._derived_rng("_action_rng", "actions")

    def _derived_rng(self, attribute: str, label: str) -> random.Random:
        """The generator kept in ``attribute``: made on first use from the episode seed and
        ``label``, so that it draws apart from :attr:`rng`."""
        generator = getattr(self, attribute)
        if generator is None:
            if self._rng is None:
                self._seed_generators(None)
            generator = random.Random(f"{self._seed}/{label}")
            setattr(self, attribute, generator)
        return generator

    def _seed_generators(self, seed: int | None) -> None:
        # what secrets.randbits does, without importing secrets (which loads hashlib and OpenSSL)
        self._seed = random.SystemRandom().getrandbits(64) if seed is None else int(seed)
        self._rng = random.Random(self._seed)
        self._np_rng = None  # made on first use, from the same seed
        self._action_rng = None  # likewise

    @property
    def unwrapped(self) -> BaseEnv:
        """The innermost environment, beneath every wrapper."""
        return self

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        name = self.spec.id if self.spec is not None else type(self).__name__
        return f"<{type(self).__name__} {name}>"


class Env(BaseEnv, watched=False):
    """A multi-turn text environment, for one agent.

    Subclasses implement :meth:`reset` (calling ``super().reset(seed)`` first) and :meth:`step`,
    and draw every random number from :attr:`rng` (or :attr:`np_random`), so that the same seed
    gives the same episode byte for byte (a class whose first ``reset`` or ``step`` changes the
    global ``random``/``numpy.random`` state gets a :class:`GlobalRandomWarning`).
    :meth:`sample_random_action` draws from :attr:`action_rng` instead, so sampling an action
    never changes the episode.

    Contract:

    * ``step`` accepts any string, however malformed or huge, and returns a valid transition;
      unparseable actions get the format-error penalty the environment documents.
    * ``sample_random_action`` returns a well-formed action.
    * ``clone`` returns an independent copy in the same state (for rolling out several times from
      one start state). The default deep-copies the environment; environments holding processes
      or connections override it.
    """

    def reset(self, seed: int | None = None, **options: Any) -> ResetResult:
        """Start a new episode and return ``(observation, info)``.

        With ``seed`` the per-instance generators are re-seeded; without it they continue, so
        successive episodes differ. Subclasses call ``super().reset(seed)`` first.
        """
        self._reseed(seed)
        return "", {}

    def step(self, action: str) -> StepResult:
        """Apply ``action`` and return ``(observation, reward, terminated, truncated, info)``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    async def areset(self, seed: int | None = None, **options: Any) -> ResetResult:
        """Native-async ``reset``; the default runs :meth:`reset` inline."""
        return self.reset(seed, **options)

    async def astep(self, action: str) -> StepResult:
        """Native-async ``step``; environments that wait on I/O may override it with real
        ``await``s, which async vector environments then await directly."""
        return self.step(action)

    def sample_random_action(self) -> str:
        """A random, well-formed action for the current state (drawn from :attr:`action_rng`)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement sample_random_action()")


def require_single_agent(env: Any, what: str) -> Any:
    """``env``, unless it is a multi-agent environment: then a
    :class:`~gem_core.errors.SingleAgentRequiredError` saying that ``what`` (the code given it)
    takes a single-agent one, and naming the single-agent views and ``check_multiagent_env``."""
    if isinstance(env, BaseEnv) and not isinstance(env, Env):
        raise single_agent_required(env.spec.id if env.spec is not None else type(env).__name__, what)
    return env


def single_agent_required(name: str, what: str) -> SingleAgentRequiredError:
    """The error for the multi-agent environment ``name`` given to ``what``."""
    return SingleAgentRequiredError(
        f"{name} is a multi-agent environment, and {what} takes a single-agent one: give it a "
        f"single-agent view, the self_play or versus wrapper (gem_core.wrappers.seats; the built-in games "
        f"register them as -selfplay and -vs-bot ids), or check it with check_multiagent_env.")


class Forwarding:
    """Looks up on ``self.env`` what it does not define itself: attributes (at access time, never
    copied, so it always sees the live state beneath it), the spec, ``blocking``, ``start_limit``, the generators
    and ``unwrapped``; ``close`` closes ``self.env``. The common part of :class:`Wrapper` and the
    single-agent views of multi-agent environments (:mod:`gem_core.wrappers.seats`)."""

    env: Any

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "env":
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self.env, name)

    def close(self) -> None:
        self.env.close()

    @property
    def spec(self) -> EnvSpec | None:
        return self.env.spec

    @property
    def blocking(self) -> bool:
        return self.env.blocking

    @property
    def start_limit(self) -> StartLimit | None:
        return self.env.start_limit

    @property
    def rng(self) -> random.Random:
        return self.env.rng

    @property
    def np_random(self) -> np.random.Generator:
        return self.env.np_random

    @property
    def action_rng(self) -> random.Random:
        return self.env.action_rng

    @property
    def unwrapped(self) -> BaseEnv:
        return self.env.unwrapped

    def __repr__(self) -> str:
        return f"<{type(self).__name__}{self.env!r}>"


class Wrapper(Forwarding, Env):  # type: ignore[override]  # properties over BaseEnv's attributes
    """Changes an environment's behaviour while keeping its interface.

    Attributes not defined on the wrapper are looked up on the wrapped environment at access time
    (never copied), so a wrapper always sees the live state beneath it. A wrapper wraps a
    single-agent :class:`Env`; a multi-agent environment becomes one through ``self_play`` or
    ``versus`` first (:mod:`gem_core.wrappers.seats`).
    """

    _watch_global_random = False  # a wrapper's calls run the wrapped environment's

    def __init__(self, env: Env):
        self.env = require_single_agent(env, f"a wrapper ({type(self).__name__})")

    def reset(self, seed: int | None = None, **options: Any) -> ResetResult:
        return self.env.reset(seed, **options)

    def step(self, action: str) -> StepResult:
        return self.env.step(action)

    async def areset(self, seed: int | None = None, **options: Any) -> ResetResult:
        if _overrides(self, "reset") and not _overrides(self, "areset"):
            return self.reset(seed, **options)  # a sync-only wrapper keeps its own logic
        return await self.env.areset(seed, **options)

    async def astep(self, action: str) -> StepResult:
        if _overrides(self, "step") and not _overrides(self, "astep"):
            return self.step(action)
        return await self.env.astep(action)

    def sample_random_action(self) -> str:
        return self.env.sample_random_action()


class ResultWrapper(Wrapper):
    """A wrapper whose logic runs on the inner environment's results.

    Subclasses implement :meth:`on_reset` and :meth:`on_step`; this class calls them after both
    the synchronous and the native-async forms of ``reset``/``step``, so the wrapper keeps an
    inner environment's native ``async`` methods usable by async vector environments.
    """

    def on_reset(self, observation: str, info: dict[str, Any]) -> ResetResult:
        """Rewrite the result of the inner ``reset``."""
        return observation, info

    def on_step(self, action: str, result: StepResult) -> StepResult:
        """Rewrite the result of the inner ``step(action)``."""
        return result

    def reset(self, seed: int | None = None, **options: Any) -> ResetResult:
        return self.on_reset(*self.env.reset(seed, **options))

    def step(self, action: str) -> StepResult:
        return self.on_step(action, self.env.step(action))

    async def areset(self, seed: int | None = None, **options: Any) -> ResetResult:
        return self.on_reset(*await self.env.areset(seed, **options))

    async def astep(self, action: str) -> StepResult:
        return self.on_step(action, await self.env.astep(action))


def wrapper_stack(env: Env) -> Iterator[Env]:
    """``env`` and each environment beneath it, outermost first: its wrappers, then the
    environment they wrap (the first that is not a :class:`Wrapper`)."""
    while isinstance(env, Wrapper):
        yield env
        env = env.env
    yield env


def _overrides(wrapper: Wrapper, method: str) -> bool:
    return getattr(type(wrapper), method) is not getattr(Wrapper, method)


class GlobalRandomWarning(UserWarning):
    """An environment class changed the global ``random`` or ``numpy.random`` state in its first
    ``reset`` or ``step`` (or, multi-agent, ``start`` or ``_process_actions``): its episodes do
    not follow the seed given to ``reset`` (and it disturbs other code's random numbers). Draw
    from ``self.rng`` / ``self.np_random`` instead."""


def _global_random_state() -> tuple[Any, ...]:
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return (random.getstate(),)
    _, keys, position, *_ = numpy.random.get_state()
    return random.getstate(), keys.tobytes(), position


def _watched_once(cls: type, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of ``cls``, checked on its first call for a change of the global random state
    (a :class:`GlobalRandomWarning`); the first call puts ``method`` itself back, so later calls
    cost nothing. Only the first call is watched: comparing the states takes a few microseconds."""

    @functools.wraps(method)
    def watched(self: Env, *args: Any, **kwargs: Any) -> Any:
        if cls.__dict__.get(name) is watched:
            setattr(cls, name, method)
        before = _global_random_state()
        result = method(self, *args, **kwargs)
        if _global_random_state() != before:
            warnings.warn(
                f"{cls.__module__}.{cls.__qualname__}.{name} changed the global random state (the `random` "
                f"or `numpy.random` module): its episodes do not follow the seed given to reset. Draw from "
                f"self.rng or self.np_random instead.", GlobalRandomWarning, stacklevel=2)
        return result

    return watched

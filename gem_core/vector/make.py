"""``make_vec``: a vector environment from registered ids (or factories) and a wrapper chain."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gem_core.core import Env
from gem_core.errors import GemError
from gem_core.registry import make, spec
from gem_core.vector.async_env import AsyncVectorEnv
from gem_core.vector.base import AutoresetMode, VectorEnv
from gem_core.vector.sync_env import SyncVectorEnv
from gem_core.wrappers.chain import WrapperSpec, chain_factory

MODES: dict[str, type[VectorEnv]] = {"sync": SyncVectorEnv, "async": AsyncVectorEnv}


def make_vec(
    env_ids_or_id: str | Callable[[], Env] | Sequence[str | Callable[[], Env]],
    num_envs: int | None = None,
    *,
    wrappers: WrapperSpec = None,
    wrapper_options: Mapping[str, Any] | None = None,
    seed: int | None = 0,
    mode: str = "sync",
    autoreset: str | AutoresetMode = "next_step",
    step_timeout: float | None = None,
    async_mode: bool | None = None,
    vec_kwargs: Sequence[Mapping[str, Any]] | None = None,
    pool: Any = None,
    **env_kwargs: Any,
) -> VectorEnv:
    """Make a vector environment.

    ``env_ids_or_id``: one id (repeated ``num_envs`` times, default 1) or a list with one id per
    slot; a zero-argument callable returning an :class:`~gem_core.Env` may stand in for an id.
    ``wrappers``: a chain of registered wrappers applied to each environment, innermost first,
    as a comma string (``"concat_chat,episode_tracking"``) or a list of names and
    ``(name, options)`` pairs. ``wrapper_options``: options offered to every wrapper of the chain
    that accepts them (``{"tokenizer": tok}``); one that no wrapper accepts is an error.
    ``seed``: slot ``i`` starts with seed ``seed + i`` (None: a random base).
    ``mode``: ``"sync"`` (one slot after another), ``"async"`` (blocking and native-async
    environments run concurrently; cheap ones inline) or ``"ray"`` (slots run on host actors of a
    Ray cluster, placed and sized by ``pool``, a :class:`~gem_core.vector.ray_pool.RayPool` or a
    mapping of its options; needs the ``ray`` extra; see :mod:`gem_core.vector.ray_env`). The
    Ray mode builds environments on the hosts from registered ids, keywords and registered
    wrapper names, so factories and wrapper callables are refused there.
    ``autoreset``: ``"next_step"`` or ``"same_step"``; ``step_timeout``: seconds after which a
    slot's call is abandoned and reported as a fault (see :mod:`gem_core.vector.base`).
    Other keywords go to every environment's constructor; ``vec_kwargs`` (one mapping per slot)
    adds keywords to one slot's constructor. gem-llm's spellings work too: ``async_mode=True``
    for ``mode="async"``, and ``wrappers`` as a list of callables ``env -> env``.
    """
    if async_mode is not None:
        if mode != "sync":
            raise GemError("Give either mode= or async_mode= (gem-llm's spelling), not both.")
        mode = "async" if async_mode else "sync"
    if isinstance(env_ids_or_id, str) or callable(env_ids_or_id):
        if num_envs is None:
            num_envs = 1
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise GemError(f"num_envs must be a positive integer, got {num_envs!r}.")
        entries: list[str | Callable[[], Env]] = [env_ids_or_id] * num_envs  # type: ignore[list-item]
    elif isinstance(env_ids_or_id, Sequence) and env_ids_or_id:
        entries = list(env_ids_or_id)
        if num_envs is not None and num_envs != len(entries):
            raise GemError(f"num_envs={num_envs} does not match the {len(entries)} ids given; "
                           "give one id per slot, or one id and num_envs.")
    else:
        raise GemError("make_vec needs an environment id, or a non-empty list of ids (one per slot).")
    if mode == "ray":
        return _make_ray(entries, wrappers, wrapper_options, vec_kwargs, env_kwargs, pool,
                         seed=seed, autoreset=autoreset, step_timeout=step_timeout)
    if pool is not None:
        raise GemError("pool= configures mode='ray' only.")
    try:
        env_class = MODES[mode]
    except (KeyError, TypeError):
        raise GemError(f"mode must be 'sync', 'async' or 'ray', got {mode!r}.") from None

    if vec_kwargs is not None and (isinstance(vec_kwargs, (str, Mapping)) or len(vec_kwargs) != len(entries)):
        raise GemError(f"vec_kwargs needs one mapping of constructor keywords per slot ({len(entries)}).")
    wrap = _callables_chain(wrappers) if _are_callables(wrappers) else chain_factory(wrappers, wrapper_options)
    factories: list[Callable[[], Env]] = []
    names: list[str | None] = []
    for slot, entry in enumerate(entries):
        if isinstance(entry, str):
            spec(entry)  # an unknown id fails here, naming the closest ids
            kwargs = {**env_kwargs, **(vec_kwargs[slot] if vec_kwargs is not None else {})}
            factories.append(functools.partial(_make_wrapped, entry, kwargs, wrap))
            names.append(entry)
        elif callable(entry):
            if env_kwargs or vec_kwargs:
                raise GemError(f"Constructor keywords ({', '.join(sorted(env_kwargs))}) apply to "
                               "registered ids only; bind them into your factory instead.")
            factories.append(functools.partial(_call_wrapped, entry, wrap))
            names.append(None)
        else:
            raise GemError(f"Expected an environment id or a factory, got {entry!r}.")
    return env_class(factories, env_ids=names, seed=seed, autoreset=autoreset, step_timeout=step_timeout)


def _make_ray(entries: list[Any], wrappers: WrapperSpec, wrapper_options: Mapping[str, Any] | None,
              vec_kwargs: Sequence[Mapping[str, Any]] | None, env_kwargs: dict[str, Any], pool: Any,
              **vec_options: Any) -> VectorEnv:
    """A :class:`~gem_core.vector.ray_env.RayVectorEnv` of recipes built from registered ids."""
    from gem_core.vector.ray_host import EnvRecipe
    from gem_core.vector.ray_pool import RayPool

    pool = RayPool.of(pool)
    if any(not isinstance(entry, str) for entry in entries) or _are_callables(wrappers):
        raise GemError("mode='ray' builds each environment on its host from a registered id, keywords and "
                       "registered wrapper names, not from Python callables. Register your environment "
                       "(gem_core.register('my:Env-v0', 'my_module:MyEnv')) and pass its id.")
    if vec_kwargs is not None and (isinstance(vec_kwargs, (str, Mapping)) or len(vec_kwargs) != len(entries)):
        raise GemError(f"vec_kwargs needs one mapping of constructor keywords per slot ({len(entries)}).")
    chain_factory(wrappers, wrapper_options)  # unknown wrappers or options fail here, not on a host
    recipes = []
    for slot, entry in enumerate(entries):
        env_spec = spec(entry)
        entry_point = env_spec.entry_point if isinstance(env_spec.entry_point, str) else None
        kwargs = {**env_kwargs, **(vec_kwargs[slot] if vec_kwargs is not None else {})}
        recipes.append(EnvRecipe(entry, kwargs, wrappers, wrapper_options, entry_point,
                                 dict(env_spec.kwargs), tuple(env_spec.wrappers)))
    from gem_core.vector.ray_env import RayVectorEnv

    return RayVectorEnv(recipes, pool=pool, **vec_options)


def _are_callables(wrappers: Any) -> bool:
    """Whether ``wrappers`` is a list of wrapper callables (gem-llm's form) rather than names."""
    if isinstance(wrappers, (str, bytes)) or not isinstance(wrappers, Sequence) or not wrappers:
        return False
    given = [callable(w) and not isinstance(w, (str, tuple)) for w in wrappers]
    if any(given) and not all(given):
        raise GemError("wrappers mixes callables with wrapper names; give one kind or the other.")
    return all(given)


def _callables_chain(wrappers: Sequence[Callable[[Env], Env]]) -> Callable[[Env], Env]:
    def wrap(env: Env) -> Env:
        for wrapper in wrappers:
            env = wrapper(env)
        return env

    return wrap


def _make_wrapped(env_id: str, kwargs: dict[str, Any], wrap: Callable[[Env], Env]) -> Env:
    return wrap(make(env_id, **kwargs))


def _call_wrapped(factory: Callable[[], Env], wrap: Callable[[Env], Env]) -> Env:
    return wrap(factory())

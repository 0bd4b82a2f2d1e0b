"""Wrapper chains as configs give them: ``"concat_chat,episode_tracking"``, innermost first."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Union

from gem_core.core import Env
from gem_core.errors import GemError

#: A chain: a comma string, or a list of names and ``(name, options)`` pairs.
WrapperSpec = Union[str, Sequence[Union[str, tuple[str, Mapping[str, Any]]]], None]


def parse_wrappers(wrappers: WrapperSpec) -> list[tuple[str, dict[str, Any]]]:
    """Normalise a chain to ``[(name, options), ...]``, innermost first.

    ``None`` or ``""`` is the empty chain; ``"a,b"`` names two wrappers (spaces ignored).
    """
    if wrappers is None:
        return []
    if isinstance(wrappers, str):
        items: Iterable[Any] = wrappers.split(",")
    elif isinstance(wrappers, Sequence):
        items = wrappers
    else:
        raise GemError(f"wrappers must be a comma-separated string or a list, got {type(wrappers).__name__}.")
    chain: list[tuple[str, dict[str, Any]]] = []
    for item in items:
        if isinstance(item, str):
            name, options = item.strip(), {}
            if not name:
                if isinstance(wrappers, str):
                    continue  # "a,,b" or a trailing comma
                raise GemError("An empty wrapper name in the wrapper list.")
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], Mapping):
            name, options = item[0].strip(), dict(item[1])
        else:
            raise GemError(f"Wrapper entries are names or (name, options) pairs, got {item!r}.")
        chain.append((name, options))
    return chain


def wrapper_option_names(wrappers: WrapperSpec) -> set[str]:
    """The keyword options that at least one wrapper of the chain accepts (for shared options)."""
    names: set[str] = set()
    for name, _ in parse_wrappers(wrappers):
        accepted = _keywords(_factory(name))
        if accepted is None:
            return {"*"}
        names |= accepted
    return names


def chain_factory(wrappers: WrapperSpec, options: Mapping[str, Any] | None = None) -> Callable[[Env], Env]:
    """A function that wraps an environment with the chain, resolved and checked once.

    ``options`` are shared: each is passed to every wrapper of the chain that accepts it (e.g.
    ``{"tokenizer": tok}`` reaches ``concat_chat``); an option that no wrapper accepts is an
    error, so typos do not pass silently. Options given in ``(name, options)`` pairs go to that
    wrapper only and take precedence.
    """
    chain = parse_wrappers(wrappers)
    shared = dict(options or {})
    steps: list[tuple[Callable[..., Env], dict[str, Any]]] = []
    used: set[str] = set()
    for name, own in chain:
        factory = _factory(name)
        accepted = _keywords(factory)
        given = {k: v for k, v in shared.items() if accepted is None or k in accepted}
        used |= set(given)
        unknown = set(own) - accepted if accepted is not None else set()
        if unknown:
            raise GemError(f"Wrapper {name!r} does not accept {', '.join(sorted(map(repr, unknown)))}; "
                           f"it accepts: {', '.join(sorted(accepted)) or '(no options)'}.")
        steps.append((factory, {**given, **own}))
    unused = set(shared) - used
    if unused:
        names = ", ".join(name for name, _ in chain) or "(none)"
        raise GemError(f"No wrapper in the chain ({names}) accepts the option(s) "
                       f"{', '.join(sorted(map(repr, unused)))}; remove them or add the wrapper that needs them.")

    def wrap(env: Env) -> Env:
        for factory, kwargs in steps:
            env = factory(env, **kwargs)
        return env

    return wrap


def wrap(env: Env, wrappers: WrapperSpec, **options: Any) -> Env:
    """Wrap ``env`` with a chain of registered wrappers, e.g.
    ``wrap(env, "concat_chat,episode_tracking", tokenizer=tok)``."""
    return chain_factory(wrappers, options)(env)


def _factory(name: str) -> Callable[..., Env]:
    from gem_core.registry import get_wrapper

    return get_wrapper(name)


def _keywords(factory: Callable[..., Env]) -> set[str] | None:
    """The keyword options a factory takes after the environment; None when ``**kwargs``."""
    try:
        parameters = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters[1:] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}

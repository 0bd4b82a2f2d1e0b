"""GEM's advantage estimators as training libraries see them: names, and token rows in and out.

A library that trains on token rows hands over one row per episode: ``token_level_rewards`` with
each turn's reward on a token of that turn (the adapters put it on the turn's last model token, see
:mod:`gem_adapters.common.turns`) and a mask that is 1 on the model's tokens. The per-turn rewards
are read back from the tokens, the GEM estimator runs on them with ``gamma`` across turns, and each
turn's advantage goes on every token of that turn.

A failed episode (see :mod:`gem_adapters.common.session`) leaves the statistics: flagged with
``valid`` (one flag per episode), or written as a row without a model token, which is how the
adapters hand a failed episode to a library that reads only token tensors (its loss mask is then 0
on every token too). Its advantages are 0.

Inside a library every GEM estimator is named ``gem_<name>`` (``gem_rebn``, ``gem_grpo``, ...), and
ReBN is also plainly ``rebn``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PLAIN_NAMES = ("rebn",)  # GEM estimators also offered under their own name


def library_name(gem_name: str) -> str:
    """The name GEM's estimator ``gem_name`` has inside a training library."""
    return gem_name if gem_name in PLAIN_NAMES else f"gem_{gem_name}"


def estimator_names() -> dict[str, str]:
    """Every name GEM offers a library, mapped to its GEM estimator."""
    from gem_core.registry import ESTIMATORS

    names = {f"gem_{name}": name for name in ESTIMATORS.names()}
    names.update({name: name for name in PLAIN_NAMES if name in ESTIMATORS})
    return names


def gem_estimator(name: str) -> str:
    """The GEM estimator behind ``name``, given as GEM names it (``rebn``, ``grpo``) or as a library
    sees it (``gem_grpo``); an unknown name raises :class:`~gem_core.UnknownNameError` naming the
    closest ones."""
    from gem_core.registry import ESTIMATORS

    if name not in ESTIMATORS and name in estimator_names():
        name = estimator_names()[name]
    ESTIMATORS.component(name)
    return name


def needs_groups(estimator: str) -> bool:
    """Whether GEM's ``estimator`` compares episodes from one start (GRPO, RLOO, ...), found by
    running it on two episodes of two singleton groups: such estimators refuse them."""
    import numpy as np

    from gem_core.estimators import EstimatorInputError
    from gem_core.estimators.dispatch import estimate_flat

    try:
        estimate_flat(gem_estimator(estimator), np.array([1.0, 0.0]), np.array([1, 1]), gamma=1.0,
                      group_ids=[0, 1])
    except EstimatorInputError:
        return True
    return False


def turn_estimate(estimator: str, rewards: Sequence[Sequence[float]], *, gamma: float, group_ids: Any = None,
                  all_reduce: Any = None, valid: Any = None) -> tuple[list[Any], list[Any]]:
    """``(advantages, returns)`` for per-turn rewards, one float64 array per episode each: the GEM
    estimator's advantages and the discounted returns ``G_t`` (0 on the turns of episodes that
    ``valid`` flags False). ``group_ids`` and ``all_reduce`` as for :func:`token_estimate`."""
    import numpy as np

    from gem_core.estimators import discounted_returns, estimate
    from gem_core.estimators.validity import valid_flags

    name = gem_estimator(estimator)
    advantages = estimate(name, rewards, gamma=gamma, group_ids=group_ids, valid=valid,
                          **_reduce_option(name, all_reduce))
    if valid is None:
        return advantages, discounted_returns(rewards, gamma=gamma)
    flags = valid_flags(valid, len(rewards))
    counted = discounted_returns([r for r, ok in zip(rewards, flags) if ok], gamma=gamma) if flags.any() else []
    parts = iter(counted)
    return advantages, [next(parts) if ok else np.zeros(len(r)) for r, ok in zip(rewards, flags)]


def token_estimate(estimator: str, token_level_rewards: Any, response_mask: Any, *, gamma: float,
                   group_ids: Any = None, all_reduce: Any = None, valid: Any = None) -> tuple[Any, Any]:
    """``(advantages, returns)`` for token rows, both shaped like ``token_level_rewards``.

    ``advantages`` are the GEM estimator's per-turn advantages on each turn's tokens; ``returns``
    the discounted per-turn returns ``G_t`` on each turn's tokens. ``group_ids`` (one per row) serve
    the group estimators; ``all_reduce`` (e.g. :func:`gem_core.estimators.torch_all_reduce`) makes
    batch statistics cover every data-parallel rank, for the estimators that take batch statistics
    (group estimators normalise within each group and ignore it). Rows that ``valid`` flags False,
    and rows without a model token, are failed episodes: left out of the statistics, 0 on all
    their tokens.
    """
    from gem_core.estimators import token_advantages

    name = gem_estimator(estimator)
    advantages = token_advantages(name, token_level_rewards, response_mask, gamma=gamma,
                                  group_ids=group_ids, valid=valid, **_reduce_option(name, all_reduce))
    returns = token_advantages("reinforce", token_level_rewards, response_mask, gamma=gamma, valid=valid)
    return advantages, returns


def _reduce_option(name: str, all_reduce: Any) -> dict[str, Any]:
    """``{"all_reduce": all_reduce}`` for the estimators that take batch statistics, else ``{}``."""
    import inspect

    from gem_core import get_estimator

    takes_all_reduce = "all_reduce" in inspect.signature(get_estimator(name)).parameters
    return {"all_reduce": all_reduce} if all_reduce is not None and takes_all_reduce else {}


def token_advantage_stats(advantages: Any, response_mask: Any, valid: Any = None) -> dict[str, float]:
    """:func:`gem_core.estimators.advantage_stats` of token rows: one value per turn (a run of 1s
    in ``response_mask``), read on the turn's last token, so that the statistics weigh turns as
    `gem train`'s do, over the rows that count (``valid``; rows without a turn have none). What
    the adapters log of the estimator's output."""
    from gem_adapters.common.turns import turn_end_positions
    from gem_core.estimators import advantage_stats

    flags = [True] * len(advantages) if valid is None else [bool(v) for v in valid]
    return advantage_stats([[float(row[i]) for i in turn_end_positions(mask)]
                            for row, mask, ok in zip(advantages, response_mask, flags) if ok])


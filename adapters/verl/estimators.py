"""GEM's advantage estimators, called the way verl calls its own.

verl hands an estimator ``token_level_rewards`` and ``response_mask`` (rows x response tokens), its
``algorithm`` config and, when present, ``index`` (the group id of every row). With the ``gem``
agent loop each row holds one episode and each turn's reward sits on that turn's last model token
(see :mod:`gem_adapters.verl.turns`), so the per-turn rewards are read back from the tokens, the
GEM estimator runs on them with ``algorithm.gamma``, and each turn's advantage is put on every
token of that turn. With verl's KL-in-reward penalty on, a turn's reward is the sum over its
tokens.

Inside verl every GEM estimator is named ``gem_<name>`` (``gem_rebn``, ``gem_grpo``, ...), and
ReBN is also plainly ``rebn``.
"""

from __future__ import annotations

from typing import Any

from gem_core.errors import GemError

PLAIN_NAMES = ("rebn",)  # GEM estimators also registered in verl under their own name


def verl_name(gem_name: str) -> str:
    """The name GEM's estimator ``gem_name`` has inside verl (``algorithm.adv_estimator``)."""
    return gem_name if gem_name in PLAIN_NAMES else f"gem_{gem_name}"


def verl_names() -> dict[str, str]:
    """Every name GEM registers inside verl, mapped to its GEM estimator."""
    from gem_core.components import ESTIMATORS

    names = {f"gem_{name}": name for name in ESTIMATORS.names()}
    names.update({name: name for name in PLAIN_NAMES if name in ESTIMATORS})
    return names


class VerlEstimator:
    """A GEM estimator with verl's estimator signature; returns ``(advantages, returns)``, where
    returns are the discounted per-turn returns ``G_t`` on each turn's tokens."""

    def __init__(self, gem_name: str):
        self.gem_name = gem_name

    def __call__(self, token_level_rewards: Any, response_mask: Any, config: Any = None,
                 index: Any = None, **_unused: Any) -> tuple[Any, Any]:
        from gem_core.estimators import token_advantages

        gamma = gamma_of(config)
        advantages = token_advantages(self.gem_name, token_level_rewards, response_mask,
                                      gamma=gamma, group_ids=index)
        returns = token_advantages("reinforce", token_level_rewards, response_mask, gamma=gamma)
        return advantages, returns

    def __repr__(self) -> str:
        return f"<GEM estimator {self.gem_name!r} for verl>"


def gamma_of(config: Any) -> float:
    """``gamma`` of verl's ``algorithm`` config (a dataclass, an OmegaConf node or a dict)."""
    gamma = getattr(config, "gamma", None)
    if gamma is None and hasattr(config, "get"):
        gamma = config.get("gamma")
    if gamma is None:
        raise GemError(
            "GEM's estimators read the discount from verl's algorithm config, but none was given: "
            "call them through verl's compute_advantage, or pass config={'gamma': ...}."
        )
    return float(gamma)

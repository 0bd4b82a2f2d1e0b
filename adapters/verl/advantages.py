"""GEM's advantage estimators, called the way verl calls its own.

verl hands an estimator ``token_level_rewards`` and ``response_mask`` (rows x response tokens), its
``algorithm`` config and, when present, ``index`` (the group id of every row). With the ``gem``
agent loop each row holds one episode and each turn's reward sits on that turn's last model token,
so :func:`gem_adapters.common.estimators.token_estimate` reads the per-turn rewards back, runs the
GEM estimator with ``algorithm.gamma`` and puts each turn's advantage on its tokens. With verl's
KL-in-reward penalty on, a turn's reward is the sum over its tokens. A row whose
``response_mask`` has no 1 is a failed episode (the agent loop writes one so, see
:mod:`gem_adapters.verl.rollout`): it is left out of the statistics and gets 0; a group
estimator keeps the rest of its ``index`` group.

Inside verl every GEM estimator is named ``gem_<name>`` (``gem_rebn``, ``gem_grpo``, ...), and
ReBN is also plainly ``rebn``. Each call logs one line (logger ``gem_adapters.verl``, INFO) with the
turns it saw, the failed episodes it left out, and the mean and standard deviation of the returns
and advantages, which is how a run's log shows that GEM's estimator made the advantages verl
trained on.
"""

from __future__ import annotations

import logging
from typing import Any

from gem_adapters.common.estimators import token_estimate
from gem_core.errors import GemError

logger = logging.getLogger("gem_adapters.verl")


class VerlEstimator:
    """A GEM estimator with verl's estimator signature; returns ``(advantages, returns)``, where
    returns are the discounted per-turn returns ``G_t`` on each turn's tokens."""

    def __init__(self, gem_name: str):
        self.gem_name = gem_name

    def __call__(self, token_level_rewards: Any, response_mask: Any, config: Any = None,
                 index: Any = None, **_unused: Any) -> tuple[Any, Any]:
        advantages, returns = token_estimate(self.gem_name, token_level_rewards, response_mask,
                                             gamma=gamma_of(config), group_ids=index)
        if logger.isEnabledFor(logging.INFO):
            logger.info("GEM estimator %s: %s", self.gem_name, summary(advantages, returns, response_mask))
        return advantages, returns

    def __repr__(self) -> str:
        return f"<GEM estimator {self.gem_name!r} for verl>"


def summary(advantages: Any, returns: Any, response_mask: Any) -> str:
    """The turns of a batch and their returns and advantages, in words (one value per turn, read on
    each turn's last token; the population standard deviation, as ReBN divides by)."""
    import torch

    mask = torch.as_tensor(response_mask).bool()
    ends = mask.clone()
    ends[:, :-1] &= ~mask[:, 1:]
    turn_returns, turn_advantages = returns[ends].double(), advantages[ends].double()

    def stats(values: Any) -> str:
        if not values.numel():
            return "none"
        return (f"mean {values.mean().item():.4f}, std {values.std(unbiased=False).item():.4f}, "
                f"min {values.min().item():.4f}, max {values.max().item():.4f}")

    failed = int((~mask.any(dim=1)).sum())
    return (f"{int(ends.sum())} turns in {mask.shape[0] - failed} episodes ({failed} failed, left out); "
            f"returns {stats(turn_returns)}; advantages {stats(turn_advantages)}")


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

"""GEM's advantage estimators inside OpenRLHF's PPO trainer.

OpenRLHF computes advantages in ``RemoteExperienceMaker.compute_advantages_and_returns``, called
inside the ``@ray.remote`` ``PPOTrainer`` (``TrainingActor`` in async mode) with every experience of
the rollout batch; its estimator list is closed. :func:`install` replaces that method with
:func:`gem_advantages_and_returns` for one GEM estimator, and :mod:`gem_adapters.openrlhf.hook`
installs it in every Ray worker that imports the experience maker.

For each sample the per-turn rewards come from its label (see :mod:`gem_adapters.openrlhf.rollout`)
and are put on each turn's last model token (a turn is a run of 1s in ``action_mask``). OpenRLHF's
reward clip range applies to each turn's reward, and with OpenRLHF's KL-in-reward penalty on, a
turn's reward also sums the penalty over its tokens. The GEM estimator then runs once over the
whole rollout batch, with ``--algo.advantage.gamma`` between turns: ReBN's mean and std cover every
turn of every sample in the batch, which is every data-parallel rank's data, since the trainer
holds the whole batch. Group estimators group the ``--rollout.n_samples_per_prompt`` samples of
each prompt, as OpenRLHF does. OpenRLHF's own shaping of one episode reward (length penalties,
group baselines, advantage whitening) does not run: the GEM estimator defines the advantage.
Each experience's ``info`` gets the batch's advantage statistics over its turns
(``gem_advantage_mean``, ``_std``, ``_min``, ``_max``), which OpenRLHF logs with its metrics.

A sample whose label holds a ``failure`` is a failed episode: it is left out of the statistics
(ReBN's mean and std, a group's baseline: the group keeps its valid members), its advantages and
returns are 0, and its row of ``action_mask`` becomes 0. OpenRLHF's policy loss (and its entropy
and KL losses) masks with ``action_mask``, so none of its tokens trains.
"""

from __future__ import annotations

from typing import Any

import torch

from gem_adapters.common import patch
from gem_adapters.common.estimators import gem_estimator, token_advantage_stats, token_estimate
from gem_adapters.common.turns import rewards_on_turn_ends
from gem_adapters.openrlhf.labels import failure_of, turn_rewards

EXPERIENCE_MAKER = "openrlhf.trainer.ppo_utils.experience_maker"
METHOD = "compute_advantages_and_returns"  # of its RemoteExperienceMaker
#: The native estimator OpenRLHF's command line is given when a GEM estimator runs: it needs no
#: critic and no prompt groups, and keeps the configured gamma.
NATIVE_STAND_IN = "reinforce"


@torch.no_grad()
def gem_advantages_and_returns(maker: Any, experiences: list[Any], *, estimator: str) -> list[Any]:
    """``RemoteExperienceMaker.compute_advantages_and_returns`` with a GEM estimator; sets each
    experience's ``advantages`` and ``returns`` (discounted per-turn returns on each turn's tokens)."""
    args = maker.strategy.args
    low, high = args.reward.clip_range
    kl_coef = max(float(maker.kl_ctl.value), 0.0)
    width = max(int(e.action_mask.shape[1]) for e in experiences)
    rows, masks, groups, valid = [], [], [], []
    for experience in experiences:
        failed = [failure_of(label) is not None for label in experience.labels]
        for row, is_failed in enumerate(failed):
            if is_failed:  # no token of it trains: OpenRLHF's losses mask with action_mask
                experience.action_mask[row] = 0
        mask = experience.action_mask.bool().cpu()
        for row, (label, is_failed) in enumerate(zip(experience.labels, failed)):
            rewards = [] if is_failed else [min(max(r, low), high) for r in turn_rewards(label)]
            tokens = rewards_on_turn_ends(mask[row], rewards).double()
            if kl_coef and experience.kl is not None:
                tokens -= kl_coef * experience.kl[row].cpu().double() * mask[row]
            rows.append(torch.nn.functional.pad(tokens, (0, width - tokens.shape[0])))
            masks.append(torch.nn.functional.pad(mask[row], (0, width - mask.shape[1])))
        groups += [index // args.rollout.n_samples_per_prompt for index in experience.index]
        valid += [not is_failed for is_failed in failed]
    token_rewards, mask = torch.stack(rows), torch.stack(masks)
    advantages, returns = token_estimate(estimator, token_rewards, mask, gamma=args.algo.advantage.gamma,
                                         group_ids=groups, valid=valid)
    stats = token_advantage_stats(advantages, mask, valid)  # the batch's, on every sample: OpenRLHF logs info's mean
    sizes = [len(e.labels) for e in experiences]
    for experience, part, advantage, ret in zip(experiences, token_rewards.split(sizes),
                                                advantages.split(sizes), returns.split(sizes)):
        columns = experience.action_mask.shape[1]
        device = experience.action_mask.device
        experience.rewards = experience.rewards.float()
        experience.advantages = advantage[:, :columns].float().to(device)
        experience.returns = ret[:, :columns].float().to(device)
        experience.info["return"] = part.sum(dim=-1).float()
        samples = len(experience.labels)
        experience.info.update({f"gem_{key}": torch.full((samples,), value) for key, value in stats.items()})
        experience.kl = None
    return experiences


def install(estimator: str, module: Any = None) -> str:
    """Make OpenRLHF's experience maker compute advantages with GEM's ``estimator`` (a GEM name, or
    ``gem_<name>``); returns the GEM name. Raises for an unknown name, naming the closest ones."""
    name = gem_estimator(estimator)

    def compute_advantages_and_returns(self: Any, experiences: list[Any]) -> list[Any]:
        return gem_advantages_and_returns(self, experiences, estimator=name)

    compute_advantages_and_returns.gem_estimator = name  # type: ignore[attr-defined]
    patch.install([experience_maker(module)], METHOD, compute_advantages_and_returns)
    return name


def installed(module: Any = None) -> str | None:
    """The GEM estimator OpenRLHF's experience maker uses, or None for OpenRLHF's own."""
    return patch.installed(experience_maker(module), METHOD)


def uninstall(module: Any = None) -> None:
    """Give OpenRLHF's experience maker its own advantage computation back."""
    patch.uninstall([experience_maker(module)], METHOD)


def experience_maker(module: Any = None) -> Any:
    """OpenRLHF's ``RemoteExperienceMaker`` class (from ``module`` when given)."""
    if module is None:
        import importlib

        module = importlib.import_module(EXPERIENCE_MAKER)
    return module.RemoteExperienceMaker

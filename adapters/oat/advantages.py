"""The GEM learner for oat: episode starts as oat's prompt rows, and GEM's advantage estimators in
oat's learner process.

**Rows.** oat's learner steps through a prompt dataloader and hands each batch to its actor. Here
the rows are episode starts: ``--train_size`` of them, with the seeds from ``--seed`` on and the
``--env`` ids taking turns (as every GEM adapter makes them); each row is ``(env_id, env_id,
seed)``, which oat passes to the actor as its prompts and references. oat's distributed sampler
gives every learner rank its own rows, ``--rollout_batch_size_per_device`` per step.

**Advantages.** oat's ``process_feedback_data`` computes each episode's advantages with
``compute_advantages`` (GAE with a critic, discounted returns without one), then flattens the
episodes into turns and keeps at most ``--rollout_batch_size_per_device`` of them, picked at
random. With a GEM estimator, the estimator runs first over every episode the actor returned, with
``--gamma`` between turns; ReBN's statistics are all-reduced over the learner ranks (population
std, GEM's eps 1e-6), and group estimators group the ``--num_samples`` episodes of each start.
oat's own code then runs as it is, and its ``compute_advantages`` hands out the GEM advantages
episode by episode; returns are the discounted per-turn returns.

A failed episode (its transitions' ``failure``, see :mod:`gem_adapters.oat.rollout`) is left out
of the GEM estimator's statistics (ReBN's mean and std across the learner ranks, its group's
baseline: the group keeps its valid members) and gets advantage 0; its transitions' ``loss_mask``
is already False, so oat's learning step trains none of its tokens. Under ``--estimator oat`` its
returns still enter oat's own whitening.

oat's ``--whiten_adv`` whitens the kept turns' advantages at learning time (population std
all-reduced over the learner ranks, eps 1e-9): applied to discounted returns it is ReBN up to eps,
but over the turns kept after subsampling rather than all turns played. With a GEM estimator the
GEM estimator defines the advantage, so ``--whiten_adv`` is refused; ``--estimator oat`` keeps
oat's own path, whitening included.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from oat.algorithms.ppo_multiturn import PPOMultiTurnLearner
from torch.utils.data import DataLoader, Dataset

from gem_adapters.common.dataset import Start, alternating_starts
from gem_adapters.oat.args import NATIVE


class StartRows(Dataset):
    """Episode starts as oat's prompt rows: ``(env_id, env_id, seed)``."""

    def __init__(self, starts: Sequence[Start]):
        self.starts = list(starts)

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index: int) -> tuple[str, str, int]:
        env_id, seed = self.starts[index]
        return env_id, env_id, seed


def episode_advantages(episodes: Sequence[Sequence[Any]], estimator: str, gamma: float, *,
                       all_reduce: Any = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(advantages, returns)`` per episode, float32, from the GEM ``estimator``; episodes of the
    same environment id and seed form a group; failed episodes get 0 and leave the statistics."""
    from gem_adapters.common.estimators import turn_estimate

    groups: dict[tuple[str, Any], int] = {}
    group_ids = [groups.setdefault((episode[0].env_id, episode[0].seed), len(groups)) for episode in episodes]
    rewards = [[float(transition.rewards) for transition in episode] for episode in episodes]
    valid = [not getattr(episode[0], "failure", "") for episode in episodes]
    advantages, returns = turn_estimate(estimator, rewards, gamma=gamma, group_ids=group_ids, all_reduce=all_reduce,
                                        valid=valid)
    return [(a.astype(np.float32), r.astype(np.float32)) for a, r in zip(advantages, returns)]


def learner_all_reduce() -> Any:
    """A sum over the learner ranks, or None in a single process."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        from gem_core.estimators import torch_all_reduce

        return torch_all_reduce()
    return None


class GemOatLearner(PPOMultiTurnLearner):
    """A ``PPOMultiTurnLearner`` reading episode starts and running GEM's estimator; see the
    module documentation."""

    _gem_advantages: Iterator[tuple[np.ndarray, np.ndarray]] | None = None

    def prepare_data(self, strategy: Any, tokenizer: Any) -> None:
        args = strategy.args
        self.prompts_dataset = StartRows(alternating_starts(args.env, args.seed, args.train_size))
        self.eval_prompts_dataset = StartRows([])
        self.prompts_dataloader = strategy.setup_dataloader(
            self.prompts_dataset, args.rollout_batch_size_per_device, shuffle=True)
        self.eval_prompts_dataloader = DataLoader(self.eval_prompts_dataset, batch_size=1)

    def process_feedback_data(self, data_list: Sequence[Sequence[Any]]) -> None:
        if self.args.estimator != NATIVE:
            self._gem_advantages = iter(episode_advantages(
                data_list, self.args.estimator, self.args.gamma, all_reduce=learner_all_reduce()))
        try:
            super().process_feedback_data(data_list)
        finally:
            self._gem_advantages = None

    def compute_advantages(self, rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, gamma: float,
                           lam: float) -> tuple[np.ndarray, np.ndarray]:
        if self._gem_advantages is None:
            return super().compute_advantages(rewards, values, dones, gamma, lam)
        advantages, returns = next(self._gem_advantages)
        if len(advantages) != len(rewards):
            raise RuntimeError(f"GEM computed {len(advantages)} advantages for an episode of {len(rewards)} turns.")
        return advantages, returns

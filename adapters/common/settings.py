"""The settings every ``gem <library> config`` command shares, and their checks."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gem_adapters.common.options import EpisodeOptions
from gem_core.errors import GemError, require_at_least_one

#: Settings that must be positive integers, by field name (the option is ``--field-name``).
POSITIVE = ("train_size", "val_size", "batch_size", "rollouts_per_start", "prompt_length",
            "response_length", "epochs", "gpus", "nodes")


@dataclass(frozen=True)
class RunSettings:
    """What a config command asks for; every field has a command-line option of the same name
    (``--train-size`` for ``train_size``; ``--n`` for ``rollouts_per_start``). Subclass it for a
    library's own options."""

    env_ids: tuple[str, ...]
    model: str
    out_dir: Path
    estimator: str = "rebn"
    gamma: float = 0.9
    train_size: int = 8192
    val_size: int = 256
    seed: int = 0
    batch_size: int = 64
    rollouts_per_start: int = 1
    prompt_length: int = 1024
    response_length: int = 2048
    learning_rate: float = 1e-6
    epochs: int = 1
    gpus: int = 1
    nodes: int = 1
    options: EpisodeOptions = field(default_factory=EpisodeOptions)

    def check(self) -> None:
        """Raise a :class:`GemError` naming the fix for settings no library could serve."""
        from gem_core import spec
        from gem_core.registry import ESTIMATORS

        if not self.env_ids:
            raise GemError("Name at least one environment (--env ENV_ID); `gem envs` lists them.")
        for env_id in self.env_ids:
            spec(env_id)  # an unknown id raises, naming the closest ones
        ESTIMATORS.component(self.estimator)  # likewise for estimators
        if not 0.0 <= self.gamma <= 1.0:
            raise GemError(f"gamma must be within [0, 1], not {self.gamma}.")
        require_at_least_one(self, POSITIVE, {"rollouts_per_start": "--n"})
        if self.rollouts_per_start < 2:
            from gem_adapters.common.estimators import needs_groups

            if needs_groups(self.estimator):
                raise GemError(f"{self.estimator} compares episodes from one start: set --n 2 or more.")
        if self.learning_rate <= 0:
            raise GemError(f"--lr must be positive, not {self.learning_rate}.")
        if self.batch_size > self.train_size:
            raise GemError(f"The batch size ({self.batch_size}) exceeds the training set "
                           f"({self.train_size} rows); lower --batch-size or raise --train-size.")

    @property
    def total_gpus(self) -> int:
        return self.gpus * self.nodes

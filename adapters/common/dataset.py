"""The datasets a library's dataloader reads: one row per episode start, (environment id, seed).

Each row carries the environment's first observation (with the configured wrappers), so the
library can filter prompts that are too long and log readable inputs; the adapter makes and resets
the environment itself when it plays the row, and the same seed gives the same first observation.
Training rows take the seeds after ``--seed``, validation rows the ones after those, and the
environments alternate row by row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gem_adapters.common.options import EpisodeOptions
from gem_adapters.common.settings import RunSettings

Start = tuple[str, int]  # (environment id, seed)
#: Builds one row: (env_id, seed, index within its split, split name, first observation) -> row.
RowFunction = Callable[[str, int, int, str, str], dict[str, Any]]


@dataclass(frozen=True)
class WrittenSplits:
    train: Path
    val: Path
    longest_prompt: int  # characters of the longest first observation


def alternating_starts(env_ids: Sequence[str], first_seed: int, count: int) -> list[Start]:
    """``count`` starts with the seeds from ``first_seed`` on, the environments taking turns."""
    return [(env_ids[i % len(env_ids)], first_seed + i) for i in range(count)]


def episode_starts(settings: RunSettings) -> tuple[list[Start], list[Start]]:
    """The training and validation starts; their seeds are disjoint."""
    both = alternating_starts(settings.env_ids, settings.seed, settings.train_size + settings.val_size)
    return both[:settings.train_size], both[settings.train_size:]


def first_observation(env_id: str, seed: int, options: EpisodeOptions) -> str:
    """The first observation of ``env_id`` reset with ``seed``, through ``options.wrappers``, as
    an adapter's session shows it (see :mod:`gem_adapters.common.session`)."""
    from gem_core import make
    from gem_core.registry import apply_wrappers
    from gem_core.wrappers.observation import as_seen

    env = apply_wrappers(make(env_id), options.wrappers)
    try:
        return as_seen(*env.reset(seed=seed))
    finally:
        env.close()


def write_rows(path: Path, starts: Sequence[Start], options: EpisodeOptions, split: str,
               row: RowFunction, progress: Callable[[int], None] | None = None) -> int:
    """Write one JSON line per start; returns the length of the longest first observation.
    ``progress`` is called with the number of rows written so far."""
    longest = 0
    with open(path, "w", encoding="utf-8") as f:
        for index, (env_id, seed) in enumerate(starts):
            observation = first_observation(env_id, seed, options)
            longest = max(longest, len(observation))
            f.write(json.dumps(row(env_id, seed, index, split, observation), ensure_ascii=False))
            f.write("\n")
            if progress is not None:
                progress(index + 1)
    return longest


def write_splits(settings: RunSettings, out: Path, row: RowFunction, *, suffix: str = ".jsonl",
                 progress: Callable[[int], None] | None = None) -> WrittenSplits:
    """Write ``train<suffix>`` and ``val<suffix>`` into ``out``; ``progress`` counts rows over
    both files."""
    train_starts, val_starts = episode_starts(settings)
    train, val = out / f"train{suffix}", out / f"val{suffix}"
    longest = write_rows(train, train_starts, settings.options, "train", row, progress)

    def val_progress(count: int) -> None:
        if progress is not None:
            progress(len(train_starts) + count)

    longest = max(longest, write_rows(val, val_starts, settings.options, "val", row, val_progress))
    return WrittenSplits(train, val, longest)

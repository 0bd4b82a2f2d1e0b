"""The reasoning-gym datasets GEM registers: their names and categories, read from the shipped
``datasets.json``, so that registering the ``rg:*`` ids imports neither reasoning-gym nor the
pack's other modules (:mod:`gem_envs.rg.datasets` checks and rewrites the file)."""

from __future__ import annotations

import functools
import json
import os

#: The dataset that mixes others with weights.
MIX = "composite"


@functools.cache
def dataset_categories() -> dict[str, str]:
    """Dataset name to category (``arithmetic``, ``games``, ...), from the shipped list."""
    with open(os.path.join(os.path.dirname(__file__), "datasets.json"), encoding="utf-8") as f:
        return json.load(f)

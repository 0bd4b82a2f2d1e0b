"""Fixtures for the ROLL adapter tests.

ROLL is not on the package index, so CI cannot install it: these tests run in the ROLL stage
(scripts/adapter_envs.py), which installs the adapter as the docs say (gem-llm 0.0.4, the
`gem` registry ROLL calls) plus Hydra and dacite (what ROLL's launcher loads configs with). They
replay, on the real `gem` package, the calls ROLL's env managers make; ROLL's own code runs in
scripts/roll_by_hand.py, with a ROLL checkout. Nothing is stood in for.
"""

from __future__ import annotations

import pytest

pytest.importorskip("gem", reason="the ROLL adapter tests run in the ROLL test environment: bash scripts/test.sh")

EASY = "game:GuessTheNumber-v0-easy"


@pytest.fixture(scope="session")
def gem():
    """The `gem` package (gem-llm 0.0.4) with GEM adapters' ids registered, as importing ROLL's env
    managers through `gem_adapters.roll.env_managers` leaves it in ROLL's env workers."""
    import gem

    import gem_adapters.roll.env_managers  # noqa: F401 - registers on import

    return gem

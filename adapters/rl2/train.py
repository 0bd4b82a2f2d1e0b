"""``torchrun ... -m gem_adapters.rl2.train <RL2 Hydra overrides> gem.estimator=rebn``: RL2's own
PPO trainer with a GEM advantage estimator.

The overrides are RL2's (``RL2/trainer/config/ppo.yaml``) plus one: ``gem.estimator=NAME`` picks
the GEM estimator (``rebn``, ``grpo``, ...; ``gem plugins`` lists them), with ``adv.gamma`` as the
discount between turns. This entry point takes that override out, gives RL2
``adv.estimator=reinforce`` (a native choice that needs no critic and that the GEM estimator
replaces), rebinds ``compute_advantages`` in ``RL2.utils.algorithms`` to the GEM estimator
(:mod:`gem_adapters.rl2.advantages`), and runs ``RL2.trainer.ppo`` unchanged, as ``__main__`` (as
``torchrun -m RL2.trainer.ppo`` would; its Hydra config is found next to it), which imports the
GEM estimator by that name. torchrun starts this module in every process, so every process that
could compute advantages has it (RL2 computes them on rank 0). Without ``gem.estimator`` it runs
RL2 as it is.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from gem_adapters.common.launch import estimator_arguments, run_launcher
from gem_adapters.rl2 import TRAINER_MODULE
from gem_core.errors import GemError

GEM_KEY = "gem.estimator"
NATIVE_STAND_IN = "reinforce"
#: RL2 overrides that cannot go with a GEM estimator, and why.
CONFLICTS = {
    "adv.estimator": f"{GEM_KEY} picks the estimator; drop adv.estimator",
}


def rl2_overrides(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """The checked GEM estimator (its GEM name) and the overrides RL2's Hydra main gets."""
    return estimator_arguments(argv, option=GEM_KEY, library="RL2", conflicts=CONFLICTS,
                               native=[f"adv.estimator={NATIVE_STAND_IN}"])


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        estimator, overrides = rl2_overrides(argv)
    except GemError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if estimator is not None:
        from gem_adapters.rl2.advantages import install

        install(estimator)
    return run_launcher(TRAINER_MODULE, overrides)


if __name__ == "__main__":
    sys.exit(main())

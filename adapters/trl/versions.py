"""The TRL versions each path of the adapter works with, and the checks that say so.

* The factory path (:mod:`~gem_adapters.trl.factory`) uses only TRL's public
  ``GRPOTrainer(environment_factory=...)``: TRL 0.29.0 (where it appeared) to 1.16.0 are tested.
  ``get_reward`` and the ``{name: factory}`` form of several environments came with TRL 1.8.0.
* The per-turn path (:class:`~gem_adapters.trl.trainer.GemGRPOTrainer`) subclasses
  ``GRPOTrainer`` and calls two of its private methods, so it runs only on the TRL minor release
  it was tested with.
"""

from __future__ import annotations

from importlib import metadata

from gem_core.errors import GemError, MissingDependencyError

#: The oldest TRL with ``environment_factory``, and the newest the factory path was tested with.
FACTORY_OLDEST = "0.29.0"
FACTORY_NEWEST = "1.16.0"
#: The TRL that calls an environment's ``get_reward`` and takes a dict of environment factories.
ENVIRONMENT_REWARD_SINCE = "1.8.0"
#: The TRL minor releases the per-turn trainer was tested with.
SUBCLASS_TESTED = ("1.16",)


def trl_version() -> str:
    """The installed TRL's version; raises :class:`MissingDependencyError` when TRL is missing."""
    try:
        return metadata.version("trl")
    except metadata.PackageNotFoundError:
        raise MissingDependencyError("Training with TRL", "trl", "trl") from None


def at_least(version: str, oldest: str) -> bool:
    from packaging.version import Version

    return Version(version) >= Version(oldest)


def has_environment_reward(version: str | None = None) -> bool:
    """Whether TRL calls an environment's ``get_reward`` (and takes several factories as a dict)."""
    return at_least(version or trl_version(), ENVIRONMENT_REWARD_SINCE)


def check_factory_trl(version: str | None = None) -> str:
    """The installed TRL's version, once it is known to have ``environment_factory``."""
    version = version or trl_version()
    if not at_least(version, FACTORY_OLDEST):
        raise GemError(f"TRL {version} has no environment_factory (it came with TRL {FACTORY_OLDEST}); "
                       f"install trl>={FACTORY_OLDEST} (tested: {FACTORY_OLDEST} and {FACTORY_NEWEST}).")
    return version


def check_subclass_trl(version: str | None = None) -> str:
    """The installed TRL's version, once it is one the per-turn trainer was tested with."""
    from packaging.version import Version

    version = version or trl_version()
    release = Version(version).release
    if ".".join(map(str, release[:2])) not in SUBCLASS_TESTED:
        tested = ", ".join(f"{minor}.x" for minor in SUBCLASS_TESTED)
        raise GemError(
            f"GEM's per-turn TRL trainer (GemGRPOTrainer, `gem trl config --mode rollout`) was tested with TRL "
            f"{tested} only: it calls GRPOTrainer's private _generate_single_turn and "
            f"_generate_and_score_completions, which other releases change. TRL {version} is installed. "
            f"Install trl=={FACTORY_NEWEST}, or train through TRL's public environment_factory "
            f"(`gem trl config --mode factory`), which works with TRL {FACTORY_OLDEST} to {FACTORY_NEWEST}.")
    return version

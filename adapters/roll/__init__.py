"""GEM on ROLL: GEM adapters' environments played by ROLL's own env managers, GEM's exact
estimators inside ROLL's agentic pipeline, and ``gem roll config``, which writes a ROLL config for
ROLL's own launcher.

ROLL is installed from its repository (it is not on the package index); ``pip install
"gem-adapters[roll]"`` adds what the bridge needs next to it (gem-llm 0.0.4, which ROLL pins).

* :mod:`~gem_adapters.roll.rollout`: GEM adapters' environments in the ``gem`` registry ROLL calls.
* :mod:`~gem_adapters.roll.env_managers`: ROLL's env managers, named so that importing them in
  ROLL's env workers registers the environments first.
* :mod:`~gem_adapters.roll.advantages` and :mod:`~gem_adapters.roll.pipeline`: GEM's estimators on
  ROLL's step samples.
"""

#: Prefix of GEM adapters' ids in the ``gem`` registry; gem-llm's and ROLL's ids never contain "/".
PREFIX = "gem_adapters/"

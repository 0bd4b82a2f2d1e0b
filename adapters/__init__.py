"""GEM adapters for training libraries: one subpackage per library, each installed with its extra,
e.g. ``pip install gem-adapters[verl]``. The built-in single-machine trainer is :mod:`gem_trainer`.

* :mod:`~gem_adapters.verl`, :mod:`~gem_adapters.openrlhf`, :mod:`~gem_adapters.oat`,
  :mod:`~gem_adapters.roll`, :mod:`~gem_adapters.rl2`, :mod:`~gem_adapters.trl`: GEM on each
  library, through its own launcher.
* :mod:`~gem_adapters.common`: what every adapter does alike, written once.
"""

"""GEM adapters for training libraries: one subpackage per library, each installed with its extra,
e.g. ``pip install gem-adapters[verl]``. The built-in single-machine trainer is :mod:`gem_trainer`."""

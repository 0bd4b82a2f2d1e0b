"""GEM adapters for training libraries: one subpackage per library, plus ``local``, the built-in
single-machine trainer. Each is installed with its extra, e.g. ``pip install gem-adapters[verl]``."""

"""The ``remote`` pack: environments served over OpenEnv's protocol (see :mod:`gem_core.remote`)."""

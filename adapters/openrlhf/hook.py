"""Ray's ``worker_process_setup_hook`` for GEM's estimators: runs when each Ray worker process of the
run starts, and, when the run names a GEM estimator (environment variable
``GEM_OPENRLHF_ESTIMATOR``), installs it in OpenRLHF's experience maker as soon as that module is
imported (a post-import hook, so workers that never compute advantages, such as the vLLM engines,
import nothing more). ``python -m gem_adapters.openrlhf.train`` sets both up.

Failures are logged as errors, since Ray reports a failing setup hook only as a worker that died.
"""

from __future__ import annotations

import logging
import os
from types import ModuleType

from gem_adapters.openrlhf import ESTIMATOR_VARIABLE

logger = logging.getLogger("gem_adapters.openrlhf")


def setup() -> None:
    """Arrange for the run's GEM estimator to replace OpenRLHF's advantage computation."""
    name = os.environ.get(ESTIMATOR_VARIABLE)
    if not name:
        return
    import wrapt

    from gem_adapters.openrlhf.advantages import EXPERIENCE_MAKER

    def install_on_import(module: ModuleType) -> None:
        from gem_adapters.openrlhf.advantages import install

        try:
            install(name, module)
        except Exception:
            logger.exception("GEM could not install its %r estimator in OpenRLHF's experience maker; "
                             "the trainer stops rather than train with another estimator.", name)
            raise

    wrapt.register_post_import_hook(install_on_import, EXPERIENCE_MAKER)

"""``python -m gem_adapters.openrlhf.train <OpenRLHF flags> --gem.estimator rebn``: OpenRLHF's own
PPO trainer with a GEM advantage estimator.

The flags are OpenRLHF's (``python -m openrlhf.cli.train_ppo_ray --help``) plus one:
``--gem.estimator NAME`` picks the GEM estimator (``rebn``, ``grpo``, ...; ``gem plugins`` lists
them), with ``--algo.advantage.gamma`` as the discount between turns. This entry point takes that
flag out, gives OpenRLHF ``--algo.advantage.estimator reinforce`` (a native choice that needs no
critic and no prompt groups, and that the GEM estimator replaces), starts Ray with a runtime
environment whose ``worker_process_setup_hook`` installs the GEM estimator in every worker process
(:mod:`gem_adapters.openrlhf.hook`), and runs OpenRLHF's command-line module unchanged, as
``__main__``. OpenRLHF calls ``ray.init`` only when Ray is not running yet, so its own runtime
environment variables are set here too. Without ``--gem.estimator`` it runs OpenRLHF as it is.

Run it wherever ``python -m openrlhf.cli.train_ppo_ray`` would run, e.g. as the entrypoint of
``ray job submit``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from gem_adapters.common.launch import estimator_arguments, run_launcher
from gem_adapters.openrlhf import ESTIMATOR_VARIABLE
from gem_core.errors import GemError

OPENRLHF_MODULE = "openrlhf.cli.train_ppo_ray"
GEM_FLAG = "--gem.estimator"
SETUP_HOOK = "gem_adapters.openrlhf.hook.setup"
#: OpenRLHF flags that cannot go with a GEM estimator, and why.
CONFLICTS = {
    "--algo.advantage.estimator": "--gem.estimator picks the estimator; drop --algo.advantage.estimator",
    "--reward.overlong_buffer_len": "length penalties shape OpenRLHF's one episode reward, which GEM's "
                                    "per-turn estimators do not read; drop the flag",
    "--reward.stop_properly_penalty_coef": "length penalties shape OpenRLHF's one episode reward, which "
                                           "GEM's per-turn estimators do not read; drop the flag",
}
#: The worker environment variables OpenRLHF's own ``ray.init`` sets (kept when set by the user).
OPENRLHF_WORKER_ENV = {"TOKENIZERS_PARALLELISM": "true", "NCCL_DEBUG": "WARN",
                       "RAY_ENABLE_ZERO_COPY_TORCH_TENSORS": "1"}


def openrlhf_argv(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """The checked GEM estimator (its GEM name) and the flags OpenRLHF's command line gets."""
    from gem_adapters.openrlhf.advantages import NATIVE_STAND_IN

    return estimator_arguments(argv, option=GEM_FLAG, library="OpenRLHF", conflicts=CONFLICTS,
                               native=["--algo.advantage.estimator", NATIVE_STAND_IN])


def runtime_env(estimator: str) -> dict[str, Any]:
    """The Ray runtime environment that installs ``estimator`` in every worker process."""
    env_vars = {key: os.environ.get(key, default) for key, default in OPENRLHF_WORKER_ENV.items()}
    env_vars[ESTIMATOR_VARIABLE] = estimator
    return {"env_vars": env_vars, "worker_process_setup_hook": SETUP_HOOK}


def start_ray(estimator: str) -> None:
    """``ray.init`` with :func:`runtime_env` (connecting to a running cluster if there is one)."""
    import ray

    if ray.is_initialized():
        raise GemError("Ray is already running in this process, without GEM's setup hook; "
                       "run gem_adapters.openrlhf.train as its own process.")
    ray.init(runtime_env=runtime_env(estimator))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        estimator, flags = openrlhf_argv(argv)
        if estimator is not None:
            os.environ[ESTIMATOR_VARIABLE] = estimator
            from gem_adapters.openrlhf.hook import setup

            setup()  # this process too
            start_ray(estimator)
    except GemError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return run_launcher(OPENRLHF_MODULE, flags)


if __name__ == "__main__":
    sys.exit(main())

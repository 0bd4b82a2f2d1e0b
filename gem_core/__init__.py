"""GEM core: the environment API, registry, plugin hooks, wrappers, episodes and checker, and
what every environment shares.

* The kernel: :mod:`~gem_core.core` (``Env``, ``Wrapper``), :mod:`~gem_core.multiagent`,
  :mod:`~gem_core.registry`, :mod:`~gem_core.spec`, :mod:`~gem_core.hookspecs`,
  :mod:`~gem_core.plugins` and :mod:`~gem_core.defaults` (the core's own plugin),
  :mod:`~gem_core.errors`, :mod:`~gem_core.env_checker`, :mod:`~gem_core.episodes`,
  :mod:`~gem_core.rollout`, :mod:`~gem_core.atif`.
* Shared by environments: :mod:`gem_core.wrappers`, :mod:`gem_core.vector`, :mod:`gem_core.tools`,
  :mod:`gem_core.sandbox`, :mod:`gem_core.estimators`, :mod:`gem_core.rubrics`,
  :mod:`~gem_core.endpoint`, :mod:`~gem_core.images`, :mod:`~gem_core.parsing`.
* :mod:`gem_core.cli`: the ``gem`` command, to which plugins add theirs.

>>> import gem_core
>>> env = gem_core.make("game:GuessTheNumber-v0-easy")
>>> observation, info = env.reset(seed=0)
>>> observation, reward, terminated, truncated, info = env.step(r"\\boxed{5}")
"""

from gem_core.core import Env, ResultWrapper, Wrapper
from gem_core.errors import (
    DataNotFoundError,
    DuplicateRegistrationError,
    EnvArgumentError,
    GemError,
    InvalidRegistrationError,
    MissingDependencyError,
    PluginError,
    UnknownEnvError,
    UnknownNameError,
)
from gem_core.hookspecs import hookimpl
from gem_core.registry import (
    get_command,
    get_estimator,
    get_tool,
    get_wrapper,
    is_multiagent,
    list_envs,
    make,
    register,
    spec,
)
from gem_core.spec import EnvSpec
from gem_core import plugins as _plugins  # noqa: E402,F401,I001 - installs plugin discovery (gem_core.registry)

__version__ = "0.2.0"  # the release CHANGELOG.md describes first

# Imported on first use, so that `import gem_core` stays light (the vector package needs numpy).
_LAZY = {
    "make_vec": "gem_core.vector",
    "VectorEnv": "gem_core.vector",
    "SyncVectorEnv": "gem_core.vector",
    "AsyncVectorEnv": "gem_core.vector",
    "collect_episodes": "gem_core.rollout",
    "acollect_episodes": "gem_core.rollout",
    "wrap": "gem_core.wrappers",
    "HistoryWrapper": "gem_core.wrappers",
    "EpisodeTrackingWrapper": "gem_core.wrappers",
    "MultiAgentEnv": "gem_core.multiagent",
    "AgentSelector": "gem_core.multiagent",
    "check_env": "gem_core.env_checker",
    "check_multiagent_env": "gem_core.env_checker",
    "EnvCheckError": "gem_core.env_checker",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gem_core' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "AgentSelector",
    "AsyncVectorEnv",
    "DataNotFoundError",
    "DuplicateRegistrationError",
    "Env",
    "EnvArgumentError",
    "EnvCheckError",
    "EnvSpec",
    "EpisodeTrackingWrapper",
    "GemError",
    "HistoryWrapper",
    "InvalidRegistrationError",
    "MissingDependencyError",
    "MultiAgentEnv",
    "PluginError",
    "ResultWrapper",
    "SyncVectorEnv",
    "UnknownEnvError",
    "UnknownNameError",
    "VectorEnv",
    "Wrapper",
    "acollect_episodes",
    "check_env",
    "check_multiagent_env",
    "collect_episodes",
    "get_command",
    "get_estimator",
    "get_tool",
    "get_wrapper",
    "hookimpl",
    "is_multiagent",
    "list_envs",
    "make",
    "make_vec",
    "register",
    "spec",
    "wrap",
]

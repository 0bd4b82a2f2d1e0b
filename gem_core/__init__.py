"""GEM core: the environment API, registry, plugin hooks, wrappers, episodes and checker, and
what every environment shares.

>>> import gem_core
>>> env = gem_core.make("game:GuessTheNumber-v0-easy")
>>> observation, info = env.reset(seed=0)
>>> observation, reward, terminated, truncated, info = env.step(r"\\boxed{5}")

The kernel:

* :mod:`~gem_core.core`: :class:`Env`, :class:`Wrapper`, :class:`ResultWrapper`, the layers of a
  wrapped environment.
* :mod:`~gem_core.multiagent`: :class:`MultiAgentEnv`, several named agents on one shared state.
* :mod:`~gem_core.envspec`: :class:`EnvSpec`, how an environment id is described.
* :mod:`~gem_core.registry`: environment ids, wrappers, tools, estimators and commands; :func:`make`.
* :mod:`~gem_core.hookspecs`: the hooks a plugin implements; :mod:`~gem_core.plugins` finds and
  loads plugins; :mod:`~gem_core.defaults` is the core's own plugin.
* :mod:`~gem_core.wrappers`: the wrappers that ship with GEM, and wrapper chains by name.
* :mod:`~gem_core.episodes`: episodes, turn by turn; :mod:`~gem_core.rollout` collects them;
  :mod:`~gem_core.sampled`: the token ids a model sampled in a turn, where they were recorded.
* :mod:`~gem_core.env_checker`: checks an environment against the contract (``gem check``);
  :mod:`~gem_core.hacks` plays known reward hacks against it (``gem check --hacks``), and
  :mod:`~gem_core.reading` reads for the answer from inside its sandboxes.
* :mod:`~gem_core.keys`: the files a pack declares as holding its answers and tests.
* :mod:`~gem_core.errors`: GEM's exceptions.

What environments share:

* :mod:`~gem_core.vector`: many environments stepped as one batch, in-process or on Ray.
* :mod:`~gem_core.tools`: tools as wrappers (Python, search, MCP).
* :mod:`~gem_core.sandbox`: bubblewrap sandboxes for untrusted code, and scoring workers.
* :mod:`~gem_core.estimators`: advantage estimators (ReBN and those it is compared with).
* :mod:`~gem_core.rubrics`: rewards of weighted parts, and LLM judges.
* :mod:`~gem_core.parsing`: defensive parsing of LLM actions.
* :mod:`~gem_core.images`: images in observations.
* :mod:`~gem_core.endpoint`: a chat model behind an OpenAI-compatible endpoint.
* :mod:`~gem_core.atif`: episodes as Harbor trajectories (ATIF).
* :mod:`~gem_core.cache`: GEM's cache folder.
* :mod:`~gem_core.cli`: the ``gem`` command, to which plugins add theirs.
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
from gem_core.envspec import EnvSpec
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
    "StartLimit": "gem_core.vector.starts",
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
    "StartLimit",
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

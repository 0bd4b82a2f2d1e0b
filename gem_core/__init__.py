"""GEM core: the environment API, registry, plugin hooks, wrappers, vector environments, tools,
episodes and advantage estimators.

>>> import gem_core
>>> env = gem_core.make("game:GuessTheNumber-v0-easy")
>>> observation, info = env.reset(seed=0)
>>> observation, reward, terminated, truncated, info = env.step(r"\\boxed{5}")
"""

from gem_core.components import get_adapter, get_estimator, get_tool, get_wrapper
from gem_core.core import Env, Wrapper
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
from gem_core.registry import EnvSpec, list_envs, make, register, spec

__version__ = "0.1.0"

__all__ = [
    "DataNotFoundError",
    "DuplicateRegistrationError",
    "Env",
    "EnvArgumentError",
    "EnvSpec",
    "GemError",
    "InvalidRegistrationError",
    "MissingDependencyError",
    "PluginError",
    "UnknownEnvError",
    "UnknownNameError",
    "Wrapper",
    "get_adapter",
    "get_estimator",
    "get_tool",
    "get_wrapper",
    "hookimpl",
    "list_envs",
    "make",
    "register",
    "spec",
]

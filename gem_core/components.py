"""The component registries (wrappers, tools, estimators, commands), kept importable here; they
live in :mod:`gem_core.registry` with the environment registry."""

from gem_core.registry import (  # noqa: F401
    COMMANDS,
    ESTIMATORS,
    REGISTRIES,
    TOOLS,
    WRAPPERS,
    Component,
    Registry,
    apply_wrappers,
    get_command,
    get_estimator,
    get_tool,
    get_wrapper,
)

ComponentRegistry = Registry
#: The ``gem`` commands' registry under its former name.
ADAPTERS = COMMANDS
get_adapter = get_command

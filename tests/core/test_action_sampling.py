"""Every environment that runs offline passes ``gem_core.check_env`` (``check_multiagent_env``
for the raw multi-agent games): among its checks, sampling an action never changes the episode
(a transcript played with sampled actions equals a replay of the same actions that samples
nothing), the same seed gives the same episode, and any string gives a valid transition."""

from __future__ import annotations

import warnings

import pytest

import gem_core
from gem_core.env_checker import EnvCheckError, EnvCheckWarning

STEPS = 6
#: What an id needs to be made at all.
MAKE_OPTIONS = {"rg:composite": {"datasets": {"leg_counting": 1, "basic_arithmetic": 1}}}


def offline_ids() -> list[str]:
    """Every single-agent id that a plugin registers and that runs offline (a multi-agent id counts
    through its views); ids other test modules register for themselves are left to those tests."""
    return [s.id for s in gem_core.list_envs() if s.offline and not s.missing_extras
            and s.source.startswith("plugin ")
            and s.id != "terminal:Tasks-v0"  # that one needs a folder of tasks
            and not (is_multiagent_class(s) and not s.wrappers)]


def multiagent_ids() -> list[str]:
    """The raw multi-agent ids (no single-agent view on top)."""
    return [s.id for s in gem_core.list_envs("multiagent:*") if is_multiagent_class(s) and not s.wrappers]


def is_multiagent_class(spec) -> bool:
    from gem_core.multiagent import MultiAgentEnv
    from gem_core.registry import load_object

    target = load_object(spec.entry_point, what="env") if isinstance(spec.entry_point, str) else spec.entry_point
    return isinstance(target, type) and issubclass(target, MultiAgentEnv)


TERMINAL_GROUPS = {"terminal:All-v0", "terminal:Easy-v0", "terminal:Medium-v0", "terminal:Hard-v0"}
#: The malformed actions that reach a reasoning-gym scorer (the others end the episode unscored).
SCORED_ACTIONS = ("", "\\boxed{}", "\\boxed{\\boxed{}", "\\boxed{é中文🙂\x00}", "\\boxed{" + "9" * 10_000 + "}")


def sweep_options(env_id: str) -> dict:
    """What the sweep runs on an id, kept short: a reasoning-gym task (one step per episode, its
    generators take up to a second per problem) plays two steps per transcript and answers the
    malformed actions that reach its scorer; a terminal task (a sandbox per episode) runs the
    replay checks only, as its code is the groups' (terminal:Easy-v0, ...), which run every check."""
    options = dict(steps=STEPS, seed=11, skip=(), **MAKE_OPTIONS.get(env_id, {}))
    if env_id.startswith("rg:"):
        options.update(steps=2, actions=SCORED_ACTIONS)
    if env_id.startswith("terminal:") and env_id not in TERMINAL_GROUPS:
        options["skip"] = ("global_random", "independent_instances", "any_action", "clone", "episode_bound",
                           "close_twice")
    return options


@pytest.mark.parametrize("env_id", offline_ids())
def test_every_offline_env_passes_check_env(env_id):
    options = sweep_options(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EnvCheckWarning)
        try:
            results = gem_core.check_env(env_id, **options)
        except EnvCheckError:
            if not env_id.startswith("terminal:"):
                raise
            # A shell shows the wall clock (`ls -l`): two runs that straddle a minute differ.
            results = gem_core.check_env(env_id, **options)
    assert {r.name for r in results if r.status != "passed"} == set(options["skip"])


@pytest.mark.parametrize("env_id", multiagent_ids())
def test_every_multiagent_env_passes_check_multiagent_env(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("error", EnvCheckWarning)
        results = gem_core.check_multiagent_env(env_id, steps=STEPS, seed=11)
    assert {r.status for r in results} == {"passed"}

"""The ``+Tool`` variants: the math environments with the Python tool wrapper."""

import pytest

import gem_core
from gem_core.sandbox.python import sandbox_problem
from gem_envs.math.plugin import TOOL_WRAPPER
from tests.helpers import REPO

needs_sandbox = pytest.mark.skipif(sandbox_problem(None) is not None, reason="the Python tool needs bubblewrap")


def test_every_math_id_has_a_tool_variant():
    specs = {s.id: s for s in gem_core.list_envs()}
    plain = [i for i in specs if i.split(":")[0] in ("math", "eval") and not i.endswith("+Tool")
             and specs[i].source == specs["math:GSM8K"].source]
    assert len(plain) == 17
    for env_id in plain:
        variant = specs[f"{env_id}+Tool"]
        assert variant.wrappers == (TOOL_WRAPPER,)
        assert variant.kwargs == specs[env_id].kwargs and variant.offline == specs[env_id].offline
    assert "math:Orz57K+Tool" in specs


@needs_sandbox
def test_an_episode_with_tool_calls_then_an_answer():
    env = gem_core.make("math:Orz57K+Tool", path=str(REPO / "tests" / "fixtures" / "math" / "ORZ-57k"))
    observation, info = env.reset(index=1)  # the sum of the first 20 odd numbers
    assert "<python>" in observation and info["tool_use_counter"] == 0
    observation, reward, terminated, _, info = env.step("<python>print(sum(range(1, 40, 2)))</python>")
    assert observation.startswith("Code execution result: 400") and reward == 0.0 and not terminated
    assert info["use_tool"] and info["tool_success"]
    observation, reward, terminated, _, info = env.step("<python>while True: pass</python>")
    assert "timed out" in observation and reward == 0.0 and not terminated
    observation, reward, terminated, _, info = env.step("So the answer is \\boxed{400}.")
    assert (reward, terminated) == (1.0, True) and info["correct"] and info["tool_use_counter"] == 2


@needs_sandbox
def test_generated_problems_with_the_tool_work_offline():
    env = gem_core.make("math:Arithmetic-v0+Tool")
    env.reset(seed=3)
    gold = env.unwrapped.answers[0]
    observation, _, _, _, _ = env.step(f"<python>print({gold!r})</python>")
    assert gold in observation
    assert env.step(f"\\boxed{{{gold}}}")[1] == 1.0

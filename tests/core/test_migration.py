"""Code written against gem-llm's public API runs here: its spellings of make, make_vec, ids and
wrappers, on game, ReasoningGym and dataset ids, and a third-party env registered without a
category (as ROLL registers "sokoban")."""

from __future__ import annotations

from pathlib import Path

import pytest

import gem_core
from gem_core import Env, GemError, Wrapper


def test_make_with_env_id_as_a_keyword():
    env = gem_core.make(env_id="game:GuessTheNumber-v0-easy", max_turns=3)
    observation, _ = env.reset(seed=0)
    assert "3 guesses" in observation
    with pytest.raises(GemError, match="needs an environment id"):
        gem_core.make()


def test_reasoning_gym_and_dataset_ids_with_their_keywords():
    env = gem_core.make(env_id="rg:leg_counting")
    observation, _ = env.reset(seed=3)
    assert observation and env.step("\\boxed{" + env.entry["answer"] + "}")[1] == 1.0
    rows = [{"problem": "What is 2+3?", "answer": "5"}]
    math_env = gem_core.make("math:GSM8K", dataset=rows)
    math_env.reset(seed=0)
    assert math_env.step("\\boxed{5}")[1] == 1.0


class Sokoban(Env):
    """A stand-in third-party game with an id that has no category."""

    def reset(self, seed=None, **options):
        super().reset(seed)
        return "push", {}

    def step(self, action):
        return "done", 1.0, True, False, {}

    def sample_random_action(self):
        return "up"


def test_an_id_without_a_category_registers_and_makes():
    if not gem_core.list_envs("sokoban-migration"):
        gem_core.register("sokoban-migration", Sokoban)
    env = gem_core.make(env_id="sokoban-migration")
    assert env.reset(seed=1)[0] == "push" and gem_core.spec("sokoban-migration").category == ""


class Shout(Wrapper):
    def step(self, action):
        observation, *rest = self.env.step(action)
        return (observation.upper(), *rest)


def test_make_vec_with_async_mode_per_slot_kwargs_and_callable_wrappers():
    with gem_core.make_vec(["game:GuessTheNumber-v0-easy"] * 2, async_mode=True,
                           vec_kwargs=[{"max_turns": 2}, {"max_turns": 5}], wrappers=[Shout]) as vec:
        observations, _ = vec.reset(seed=0)
        assert vec.concurrent and "2 guesses" in observations[0] and "5 guesses" in observations[1]
        observations, *_ = vec.step(["\\boxed{1}", "\\boxed{1}"])
        assert all(o == o.upper() for o in observations)
    with pytest.raises(GemError, match="one mapping of constructor keywords per slot"):
        gem_core.make_vec("game:GuessTheNumber-v0-easy", 2, vec_kwargs=[{}])
    with pytest.raises(GemError, match="either mode= or async_mode="):
        gem_core.make_vec("game:GuessTheNumber-v0-easy", mode="async", async_mode=True)
    with pytest.raises(GemError, match="mixes callables"):
        gem_core.make_vec("game:GuessTheNumber-v0-easy", wrappers=[Shout, "concat"])


def test_a_tool_wrapped_env_driven_by_tool_call_actions():
    env = gem_core.make("math:GSMSymbolic-v0+Tool")
    env.reset(seed=0)
    observation, reward, terminated, _, _ = env.step("<python>print(6 * 7)</python>")
    assert "42" in observation and not terminated


def test_tool_keywords_of_gem_llm():
    from gem_core.tools.base import ToolConfigError

    search = gem_core.get_tool("search")
    with pytest.raises(ToolConfigError, match="not both"):
        search(url="http://127.0.0.1:1/retrieve", search_url="http://127.0.0.1:2/retrieve")
    assert search(search_url="http://127.0.0.1:1/retrieve").backend.url.startswith("http://127.0.0.1:1")
    with pytest.raises(ToolConfigError, match="always runs in a bubblewrap sandbox"):
        gem_core.get_tool("python")(timeout=3, sandbox_type="none", keep_error_last_line=True)


def test_the_tool_wrapper_steps_with_verbose(caplog):
    env = gem_core.make("math:GSMSymbolic-v0+Tool")
    env.reset(seed=0)
    with caplog.at_level("INFO", logger="gem_core.tools"):
        observation, *_ = env.step("<python>print(6 * 7)</python>", verbose=True)
    assert "42" in observation and "Tool call" in caplog.text


@pytest.mark.parametrize("keyword, reason", [("seed", "reset(seed=...)"), ("max_workers", "worker pools"),
                                             ("sandbox_type", "bubblewrap"), ("verbose", "logging"),
                                             ("load_from_cache_file", "Hugging Face datasets")])
def test_dataset_keywords_of_gem_llm_are_refused_with_a_reason(keyword, reason):
    from gem_core import EnvArgumentError

    import re

    with pytest.raises(EnvArgumentError, match=f"'{keyword}' is gem-llm's: .*{re.escape(reason)}"):
        gem_core.make("eval:HumanEval", **{keyword: 1})


def test_a_tool_subclass_passing_num_workers_is_told_why():
    from gem_core.tools.base import Tool, ToolConfigError

    class Echo(Tool):
        def __init__(self):
            super().__init__(num_workers=4)  # as written for gem-llm's BaseTool

    with pytest.raises(ToolConfigError, match="num_workers .* has no meaning here"):
        Echo()


def test_a_subclass_drawing_from_the_global_random_state_is_warned_once():
    import random
    import warnings

    import numpy as np

    from gem_core.core import GlobalRandomWarning

    class GlobalDice(gem_core.Env):  # written as for gem-llm, which seeds the global generators
        def reset(self, seed=None, **options):
            super().reset(seed)
            random.seed(seed)
            return str(random.randint(1, 6)), {}

        def step(self, action):
            return str(np.random.randint(6)), 0.0, False, False, {}

    class SeededDice(gem_core.Env):
        def reset(self, seed=None, **options):
            super().reset(seed)
            return str(self.rng.randint(1, 6)), {}

        def step(self, action):
            return str(self.np_random.integers(6)), 0.0, False, False, {}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for cls in (GlobalDice, SeededDice):
            env = cls()
            for seed in (1, 2):
                env.reset(seed=seed)
                env.step("roll")
    messages = [str(w.message) for w in caught if w.category is GlobalRandomWarning]
    assert len(messages) == 2  # GlobalDice's first reset and first step; nothing from SeededDice
    assert "GlobalDice.reset changed the global random state" in messages[0]
    assert "GlobalDice.step" in messages[1] and "self.rng or self.np_random" in messages[1]


def test_no_built_in_environment_touches_the_global_random_state():
    from tests.helpers import run_python

    result = run_python("""
        import warnings
        import gem_core
        from gem_core.core import GlobalRandomWarning
        from tests.core.test_action_sampling import MAKE_OPTIONS, offline_ids

        warnings.simplefilter("error", GlobalRandomWarning)
        for env_id in offline_ids():  # a fresh process: every class's first reset and step are watched
            env = gem_core.make(env_id, **MAKE_OPTIONS.get(env_id, {}))
            try:
                env.reset(seed=1)
                env.step(env.sample_random_action())
            finally:
                env.close()
        print("ok")
    """, path=[Path(__file__).resolve().parents[2]], timeout=300)
    assert result.stdout.strip().endswith("ok"), result.stderr[-2000:]

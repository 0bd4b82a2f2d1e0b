"""make_vec: ids, wrappers, options, subset stepping, bad input, lifecycle."""

import sys

import pytest

import gem_core
from gem_core import GemError
from gem_core.vector import EPISODE_SEED, AsyncVectorEnv, SyncVectorEnv, VectorEnv
from tests.helpers import run_python
from tests.vector.envs import Countdown


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_subset_stepping_advances_only_the_given_slots_in_the_given_order(mode):
    with gem_core.make_vec(lambda: Countdown(3), 3, mode=mode) as vec:
        vec.reset()
        obs, rewards, term, trunc, infos = vec.step(["x", "y"], indices=[2, 0])
        assert len(obs) == 2 and rewards.tolist() == [1.0, 1.0]
        assert obs[0].endswith("t1 got x") and obs[1].endswith("t1 got y")
        obs, rewards, *_ = vec.step({1: "z", 2: "w"})
        assert rewards.tolist() == [1.0, 2.0]  # slot 1 had not moved, slot 2 had
        obs, rewards, term, *_ = vec.step(["a"], indices=[2])
        assert term.tolist() == [True]
        obs, rewards, term, *_ = vec.step(["b", "c"], indices=[0, 1])  # slot 2 waits, ended
        assert term.tolist() == [False, False]
        obs, rewards, term, trunc, infos = vec.step(["ignored"], indices=[2])
        assert EPISODE_SEED in infos[0] and rewards.tolist() == [0.0]


def test_ids_lists_wrappers_and_constructor_keywords():
    ids = ["game:GuessTheNumber-v0-easy", "game:GuessTheNumber-v0-hard"]
    with gem_core.make_vec(ids, wrappers="concat_with_action,episode_tracking", mode="async") as vec:
        assert isinstance(vec, AsyncVectorEnv) and vec.num_envs == 2 and vec.env_ids == ids
        obs, infos = vec.reset()
        assert "from 1 to 10" in obs[0] and "from 1 to 50" in obs[1]
        obs, _, _, _, infos = vec.step([r"\boxed{0}", r"\boxed{0}"])
        assert "\\boxed{0}\n" in obs[0] and infos[0]["step_counter"] == 1
    with gem_core.make_vec("game:GuessTheNumber-v0-hard", 2, max_turns=1) as vec:
        assert isinstance(vec, SyncVectorEnv) and vec.env_ids == ["game:GuessTheNumber-v0-hard"] * 2
        vec.reset()
        *_, trunc, _ = vec.step([r"\boxed{0}", r"\boxed{0}"])
        assert trunc.all()  # max_turns=1 reached the constructor


def test_factories_are_named_by_spec_or_class():
    with gem_core.make_vec([lambda: Countdown(), lambda: gem_core.make("game:GuessTheNumber-v0")]) as vec:
        assert vec.env_ids == ["Countdown", "game:GuessTheNumber-v0"]
    with SyncVectorEnv([Countdown, Countdown], env_ids=["a", None]) as vec:
        assert vec.env_ids == ["a", "Countdown"]


@pytest.mark.parametrize("call, message", [
    (lambda: gem_core.make_vec("game:GuesTheNumber-v0-easy", 2), "GuessTheNumber-v0-easy"),
    (lambda: gem_core.make_vec("game:GuessTheNumber-v0-easy", 2, colour="red"), "does not accept 'colour'"),
    (lambda: gem_core.make_vec(["game:GuessTheNumber-v0"] * 2, 3), "one id per slot"),
    (lambda: gem_core.make_vec("game:GuessTheNumber-v0", 0), "positive integer"),
    (lambda: gem_core.make_vec([]), "non-empty list"),
    (lambda: gem_core.make_vec("game:GuessTheNumber-v0", mode="threads"), "'sync', 'async' or 'ray'"),
    (lambda: gem_core.make_vec("game:GuessTheNumber-v0", autoreset="never"), "next_step"),
    (lambda: gem_core.make_vec("game:GuessTheNumber-v0", step_timeout=0), "step_timeout"),
    (lambda: gem_core.make_vec("game:GuessTheNumber-v0", wrappers="concat,episode_trackin"), "episode_tracking"),
    (lambda: gem_core.make_vec("game:GuessTheNumber-v0", wrappers="concat",
                               wrapper_options={"tokenizer": object()}), "No wrapper in the chain"),
    (lambda: gem_core.make_vec("game:GuessTheNumber-v0", wrappers="concat_chat"), "needs a tokenizer"),
    (lambda: gem_core.make_vec(Countdown, 2, length=3), "bind them into your factory"),
    (lambda: SyncVectorEnv([lambda: "not an env"]), "not a gem_core.Env"),
])
def test_bad_arguments_raise_clear_errors(call, message):
    with pytest.raises(GemError, match=message):
        call()


def test_bad_step_calls_raise_clear_errors():
    with gem_core.make_vec(lambda: Countdown(), 3) as vec:
        with pytest.raises(GemError, match="reset"):
            vec.step(["a"] * 3)
        vec.reset()
        for actions, indices, message in [
            (["a", "b"], None, "2 actions for 3 slots"),
            ("abc", None, "list of strings"),
            (["a", None, "c"], None, "slot 1 is NoneType"),
            (["a", "b"], [0, 0], "repeat"),
            (["a"], [3], "0 to 2"),
            (["a"], [True], "0 to 2"),
            (["a"], [0, 1], "the 2 slots in indices"),
        ]:
            with pytest.raises(GemError, match=message):
                vec.step(actions, indices)
        with pytest.raises(GemError, match="not both"):
            vec.step({0: "a"}, indices=[0])
        obs, *_ = vec.step(["a", "b", "c"])  # a failed call changed nothing
        assert all(o.endswith("t1 got " + a) for o, a in zip(obs, "abc"))


class Closing(Countdown):
    closed = 0

    def close(self):
        Closing.closed += 1


def test_close_and_context_manager():
    Closing.closed = 0
    with gem_core.make_vec(Closing, 3, mode="async") as vec:
        vec.reset()
        assert "3 x Closing" in repr(vec) and len(vec) == 3
    assert Closing.closed == 3
    vec.close()  # idempotent
    assert Closing.closed == 3
    with pytest.raises(GemError, match="closed"):
        vec.reset()


def test_vector_exports_are_lazy_and_light():
    assert gem_core.make_vec is gem_core.vector.make_vec
    assert gem_core.collect_episodes is sys.modules["gem_core.rollout"].collect_episodes
    assert issubclass(gem_core.AsyncVectorEnv, VectorEnv)
    assert "make_vec" in dir(gem_core)
    with pytest.raises(AttributeError):
        gem_core.no_such_thing  # noqa: B018
    result = run_python("""
        import sys, gem_core
        assert "numpy" not in sys.modules
        gem_core.make_vec
        print("numpy" in sys.modules)
    """)
    assert result.stdout.strip() == "True", result.stderr

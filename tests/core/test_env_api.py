"""The Env and Wrapper contracts."""

import asyncio
import pickle

import pytest

import gem_core
from gem_core import Env, Wrapper


class Counter(Env):
    def __init__(self, limit: int = 3):
        self.limit = limit
        self.count = 0

    def reset(self, seed=None, **options):
        super().reset(seed)
        self.count = 0
        self.secret = self.rng.randint(0, 10**9)
        return f"start {self.secret}", {}

    def step(self, action):
        self.count += 1
        return f"{action} {self.rng.random()}", 1.0, self.count >= self.limit, False, {"count": self.count}

    def sample_random_action(self):
        return str(self.rng.randint(0, 9))


def transcript(env, seed, steps=5):
    out = [env.reset(seed=seed)[0]]
    for _ in range(steps):
        out.append(env.step(env.sample_random_action())[0])
    return out


def test_same_seed_same_episode_and_generators_are_per_instance():
    a, b = Counter(limit=100), Counter(limit=100)
    assert transcript(a, 7) == transcript(b, 7)
    assert transcript(a, 7) != transcript(a, 8)
    # reset without a seed continues the stream: two unseeded episodes differ
    a.reset(seed=1)
    first = a.reset()[0]
    assert a.reset()[0] != first


def test_no_global_random_state_is_touched():
    import random

    random.seed(123)
    expected = random.random()
    random.seed(123)
    transcript(Counter(limit=100), 5)
    assert random.random() == expected


def test_np_random_is_seeded_with_the_same_seed():
    a, b = Counter(), Counter()
    a.reset(seed=3)
    b.reset(seed=3)
    assert a.np_random.integers(0, 1 << 30) == b.np_random.integers(0, 1 << 30)


def test_clone_is_independent_and_in_the_same_state():
    env = Counter(limit=100)
    env.reset(seed=11)
    env.step("x")
    twin = env.clone()
    assert [env.step("a")[0] for _ in range(3)] == [twin.step("a")[0] for _ in range(3)]
    env.step("b")
    assert env.count == twin.count + 1


class Tag(Wrapper):
    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs + " [tagged]", reward, terminated, truncated, info


def test_wrapper_forwards_attributes_live():
    env = Counter()
    wrapped = Tag(Tag(env))
    wrapped.reset(seed=0)
    wrapped.step("a")
    assert wrapped.count == 1  # read through two wrappers, never copied
    env.count = 42
    assert wrapped.count == 42
    assert wrapped.unwrapped is env
    assert wrapped.rng is env.rng
    assert wrapped.step("b")[0].endswith("[tagged] [tagged]")
    with pytest.raises(AttributeError):
        wrapped.no_such_attribute
    with pytest.raises(AttributeError):
        wrapped._private


def test_wrapper_stack_lists_the_layers_outermost_first():
    from gem_core.core import wrapper_stack

    env = Counter()
    inner = Tag(env)
    outer = Tag(inner)
    assert list(wrapper_stack(outer)) == [outer, inner, env]
    assert list(wrapper_stack(env)) == [env]


def test_wrapped_env_clones_and_pickles():
    wrapped = Tag(Counter(limit=100))
    wrapped.reset(seed=2)
    twin = wrapped.clone()
    assert twin.step("a") == wrapped.step("a")
    restored = pickle.loads(pickle.dumps(wrapped))
    assert restored.step("z") == wrapped.step("z")


def test_async_methods_keep_a_sync_wrappers_logic():
    wrapped = Tag(Counter())
    asyncio.run(wrapped.areset(seed=0))
    obs, *_ = asyncio.run(wrapped.astep("a"))
    assert obs.endswith("[tagged]")


def test_make_sets_spec_and_forwards_it_through_wrappers():
    env = gem_core.make("game:GuessTheNumber-v0-easy")
    assert env.spec.id == "game:GuessTheNumber-v0-easy"
    assert Tag(env).spec is env.spec
    custom = gem_core.make("game:GuessTheNumber-v0-easy", max_turns=9)
    assert custom.spec.kwargs["max_turns"] == 9 and custom.max_turns == 9
    assert gem_core.spec("game:GuessTheNumber-v0-easy").kwargs["max_turns"] == 4

"""Start limits: environments whose reset is heavy start at a bounded rate."""

import shutil
import time

import pytest

import gem_core
from gem_core import StartLimit
from gem_core.errors import GemError
from gem_core.vector import EPISODE_SEED, FAULT
from tests.vector.envs import SlowStart


def slow_starts(limit, delay=0.1):
    """A SlowStart class of its own, declaring ``limit``, whose resets take ``delay`` seconds."""
    def __init__(self):
        SlowStart.__init__(self, delay)

    return type("LimitedStart", (SlowStart,), {"start_limit": limit, "active": 0, "most": 0, "__init__": __init__})


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_start_limit_holds_resets_to_its_number_at_once(mode):
    Limited = slow_starts(StartLimit("vector-test: two at once", at_once=2))
    with gem_core.make_vec([Limited] * 6, mode=mode, step_timeout=30 if mode == "sync" else None) as vec:
        _, infos = vec.reset()
        assert all(EPISODE_SEED in info for info in infos)
        for _ in range(3):  # and the autoresets of the episodes that end (two steps each)
            vec.step(["a"] * 6)
    assert Limited.most == (2 if mode == "async" else 1)


def test_without_a_limit_the_same_resets_overlap():
    Unlimited = slow_starts(None)
    with gem_core.make_vec([Unlimited] * 6, mode="async") as vec:
        vec.reset()
    assert Unlimited.most > 2


def test_a_rate_spaces_the_starts():
    Limited = slow_starts(StartLimit("vector-test: twenty a second", per_second=20), delay=0.0)
    with gem_core.make_vec([Limited] * 5, mode="async") as vec:
        started = time.monotonic()
        vec.reset()
        assert time.monotonic() - started >= 4 / 20 - 0.01  # five starts, a twentieth of a second apart


def test_a_reset_held_at_the_gate_past_its_time_left_never_starts():
    Limited = slow_starts(StartLimit("vector-test: one at once", at_once=1), delay=1.0)
    resets = []

    class Counted(Limited):
        def reset(self, seed=None, **options):
            resets.append(seed)
            return super().reset(seed, **options)

    with gem_core.make_vec([Counted, Counted], mode="async") as vec:
        vec.begin_reset(indices=[0])  # slot 0 takes the gate for a second
        while not resets:
            time.sleep(0.01)
        _, infos = vec.reset(indices=[1], time_left=0.3)
        assert infos[0][FAULT]["kind"] == "deadline" and infos[0][FAULT]["phase"] == "reset"
        assert [EPISODE_SEED in row[4] for _, row in vec.finished(timeout=10)] == [True]
    assert resets == [0]  # slot 1 waited at the gate, was given up there, and never reset


def test_wrappers_forward_the_limit_and_one_name_has_one_limit():
    limit = StartLimit("vector-test: forwarded", at_once=3)
    Limited = slow_starts(limit, delay=0.0)
    assert gem_core.wrap(Limited(), "concat").start_limit is limit
    Other = slow_starts(StartLimit("vector-test: forwarded", at_once=4), delay=0.0)
    with gem_core.make_vec([Limited, Other], mode="async") as vec:
        _, infos = vec.reset()
    assert EPISODE_SEED in infos[0]
    assert "declare the start limit 'vector-test: forwarded' differently" in infos[1][FAULT]["error"]


@pytest.mark.parametrize("kwargs, message", [
    ({"name": ""}, "needs a name"),
    ({"name": "x", "at_once": 0}, "at_once"),
    ({"name": "x", "per_second": -1.0}, "per_second"),
])
def test_bad_limits_are_refused(kwargs, message):
    with pytest.raises(GemError, match=message):
        StartLimit(**kwargs)


def test_terminal_containers_declare_a_start_limit():
    from gem_envs.terminal.env import CONTAINER_STARTS

    assert gem_core.make("terminal:All-v0", backend="bubblewrap").start_limit is None
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/install_test_deps.sh installs it)")
    env = gem_core.make("terminal:All-v0", backend="podman")
    assert env.start_limit is CONTAINER_STARTS and CONTAINER_STARTS.at_once >= 2

"""Time limits on calls, calls left in flight, and deadlines over episodes and collections.

Hangs here end when their environment is closed (as a sandbox's call returns when its sandbox is
killed), so a test can tell that a hung environment was closed at its deadline, not when its
call returned.
"""

import asyncio
import logging
import math
import threading
import time

import pytest

import gem_core
from gem_core import GemError
from gem_core.vector import EPISODE_SEED, FAULT
from tests.vector.conftest import make_vec
from tests.vector.envs import Countdown, Sleepy, Stalling

IN_PROCESS = ["sync", "async"]
CONCURRENT = ["async", "ray"]
STALLING = "vector-test:Stalling-v0"


def echo(observations):
    return [o[-3:] for o in observations]


# ---- the vector environment: time_left, calls in flight --------------------------------------

@pytest.mark.parametrize("mode", IN_PROCESS)
def test_a_call_past_its_time_left_is_given_up_and_its_environment_closed_at_once(mode):
    with gem_core.make_vec([lambda: Stalling(stall_seed=1, turn=1), Countdown], mode=mode, seed=1) as vec:
        vec.reset()
        hung = vec.envs[0]
        started = time.monotonic()
        obs, rewards, term, trunc, infos = vec.step(["a", "b"], time_left=0.3)
        assert time.monotonic() - started < 5
        assert infos[0][FAULT] == {"kind": "deadline", "phase": "step", "deadline_s": 0.3}
        assert obs[0] == "" and trunc[0] and not term[0] and obs[1].endswith("t1 got b")
        assert hung.closed.wait(5) and hung.returned.wait(5)  # closed while its call hung, which then returned
        assert vec.envs[0] is None  # replaced at the slot's next call
        obs, _, _, _, infos = vec.step(["ignored", "c"])
        assert EPISODE_SEED in infos[0] and vec.envs[0] is not hung


def test_time_left_per_slot_and_none_left_starts_nothing():
    with gem_core.make_vec([Countdown, Countdown], mode="async") as vec:
        vec.reset()
        obs, _, _, trunc, infos = vec.step(["a", "b"], time_left=[0, None])
        assert infos[0][FAULT]["kind"] == "deadline" and trunc[0]
        assert obs[1].endswith("t1 got b")
        assert vec.envs[0] is None  # closed and replaced, although it never ran
        for bad, message in [([1.0], "one per slot"), ("soon", "seconds"), ([float("nan"), 1], "numbers"),
                             ([True, 1], "numbers")]:
            with pytest.raises(GemError, match=message):
                vec.step(["a", "b"], time_left=bad)


@pytest.mark.parametrize("mode", CONCURRENT)
def test_calls_in_flight_are_handed_over_as_they_finish(mode, request):
    if mode == "ray":
        request.getfixturevalue("ray_cluster")
    ids = ["vector-test:Sleepy-v0"] + ["vector-test:Countdown-v0"] * 3
    with make_vec(ids, mode=mode, vec_kwargs=[{"delay": 1.0}, {}, {}, {}]) as vec:
        vec.begin_reset()
        rows = []
        while len(rows) < 4:
            rows += vec.finished(timeout=30)
        assert sorted(slot for slot, _ in rows) == [0, 1, 2, 3] and all(EPISODE_SEED in r[4] for _, r in rows)
        vec.begin_step(["a"] * 4, time_left=30)
        assert vec.in_flight == [0, 1, 2, 3]
        early = []
        while len(early) < 3:
            early += vec.finished(timeout=30)
        assert sorted(slot for slot, _ in early) == [1, 2, 3]  # the slow slot held back none of them
        assert vec.in_flight == [0]
        with pytest.raises(GemError, match="in flight"):
            vec.step(["a"], indices=[0])
        vec.begin_step(["b"] * 3, indices=[1, 2, 3])
        later = []
        while len(later) < 4:
            later += vec.finished(timeout=30)
        assert sorted(slot for slot, _ in later) == [0, 1, 2, 3]
        assert all(row[0].endswith(("t1 got a", "t2 got b")) for _, row in later)
        assert vec.finished(timeout=30) == []  # nothing in flight: at once


@pytest.mark.parametrize("mode", CONCURRENT)
def test_a_cancelled_call_is_never_handed_over_and_its_environment_is_replaced(mode, request):
    if mode == "ray":
        request.getfixturevalue("ray_cluster")
    with make_vec([STALLING, "vector-test:Countdown-v0"], mode=mode, vec_kwargs=[{"stall_seed": 0, "turn": 1}, {}],
                  seed=0) as vec:
        vec.reset()
        hung = vec.envs[0]
        vec.begin_step(["a", "b"], time_left=60)
        rows = vec.finished(timeout=30)
        assert [slot for slot, _ in rows] == [1]
        vec.cancel([0, 1])
        assert vec.in_flight == [] and vec.finished(timeout=0.1) == []
        if mode == "async":
            assert hung.closed.wait(5) and vec.envs[0] is None
        obs, _, _, _, infos = vec.step(["ignored", "c"])
        assert EPISODE_SEED in infos[0] and obs[1].endswith("t2 got c")


def test_retire_closes_an_idle_environment_and_the_next_call_starts_afresh():
    with gem_core.make_vec([Countdown, Countdown], mode="async") as vec:
        vec.reset()
        vec.step(["a", "b"])
        old = vec.envs[0]
        vec.retire([0])
        assert vec.envs[0] is None
        obs, _, _, _, infos = vec.step(["ignored", "c"])
        assert EPISODE_SEED in infos[0] and obs[0].startswith("start") and vec.envs[0] is not old


# ---- collect_episodes: deadlines -------------------------------------------------------------

class CountingResets(Countdown):
    resets = 0

    def reset(self, seed=None, **options):
        CountingResets.resets += 1
        return super().reset(seed)


@pytest.mark.parametrize("kwargs, message", [
    ({"deadline": 0}, "deadline must be a positive number"),
    ({"deadline": -1}, "deadline must be a positive number"),
    ({"episode_deadline": 0}, "episode_deadline must be a positive number"),
    ({"episode_deadline": float("nan")}, "episode_deadline must be a positive number"),
    ({"episode_deadline": math.inf}, "episode_deadline must be a positive number"),
    ({"deadline": True}, "deadline must be a positive number"),
    ({"deadline": "60"}, "deadline must be a positive number"),
    ({"deadline": 0.1}, r"shorter than the vector environment's step_timeout \(0.5 s\)"),
    ({"episode_deadline": 0.2}, r"episode_deadline \(0.2 s\) is shorter than .* step_timeout"),
    ({"spares": -1}, "spares"),
    ({"policy_version": "v1"}, "policy_version"),
    ({"carry_over": "yes"}, "carry_over"),
])
def test_bad_deadlines_are_refused_before_anything_runs(kwargs, message):
    CountingResets.resets = 0
    with gem_core.make_vec([CountingResets] * 2, mode="async", step_timeout=0.5) as vec:
        with pytest.raises(GemError, match=message):
            gem_core.collect_episodes(vec, echo, 4, **kwargs)
    assert CountingResets.resets == 0


@pytest.mark.parametrize("mode", CONCURRENT)
def test_a_hung_episode_fails_at_its_deadline_and_holds_back_no_other(mode, request):
    if mode == "ray":
        request.getfixturevalue("ray_cluster")
    plan = list(range(12))
    with make_vec(STALLING, 4, mode=mode, seed=0, stall_seed=5, delay=0.01) as vec:
        started = time.monotonic()
        episodes = gem_core.collect_episodes(vec, echo, 12, seed=plan, episode_deadline=2.0)
        took = time.monotonic() - started
    assert sorted(e.seed for e in episodes) == plan
    failed = [e for e in episodes if not e.valid]
    assert [(e.seed, e.failure.kind, e.failure.phase, e.failure.turn) for e in failed] == [(5, "deadline", "step", 1)]
    assert all(e.outcome == "completed" and e.num_turns == 3 for e in episodes if e.valid)
    assert took < 30  # bounded by the deadline, not by the hang (which would last 60 s)


def test_in_the_sync_mode_a_hung_episode_fails_at_its_deadline_too():
    with gem_core.make_vec([lambda: Stalling(stall_seed=2, delay=0.01)] * 2, mode="sync", seed=0) as vec:
        episodes = gem_core.collect_episodes(vec, echo, 6, seed=list(range(6)), episode_deadline=1.0)
    by_seed = {e.seed: e for e in episodes}
    assert sorted(by_seed) == list(range(6))
    assert by_seed[2].failure.kind == "deadline"
    assert all(e.valid for seed, e in by_seed.items() if seed > 3)  # those started after the hang play as usual


async def hung_policy(observations):
    await asyncio.sleep(60)


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_the_collection_deadline_returns_even_when_the_policy_hangs(driver):
    with gem_core.make_vec(lambda: Countdown(3), 3, mode="async") as vec:
        started = time.monotonic()
        if driver == "sync":
            episodes = gem_core.collect_episodes(vec, hung_policy, 6, deadline=0.5)
        else:
            episodes = asyncio.run(gem_core.acollect_episodes(vec, hung_policy, 6, deadline=0.5))
        assert time.monotonic() - started < 10
        assert episodes and all(e.failure.kind == "deadline" and e.failure.phase == "policy" and e.num_turns == 0
                                for e in episodes)
        assert len(gem_core.collect_episodes(vec, echo, 4)) == 4  # the vector environment goes on


def test_an_episode_waiting_too_long_for_the_policy_fails_and_its_environment_is_replaced():
    def slow(observations):
        time.sleep(0.2)
        return ["a"] * len(observations)

    with gem_core.make_vec(lambda: Countdown(10), 2, mode="async") as vec:
        first = list(vec.envs)
        episodes = gem_core.collect_episodes(vec, slow, 2, episode_deadline=0.5)
        assert [e.failure.kind for e in episodes] == ["deadline", "deadline"]
        assert all(e.failure.phase == "policy" and 0 < e.num_turns < 10 for e in episodes)
        assert all(env is None or env is not old for env, old in zip(vec.envs, first))


# ---- carry-over and spares -----------------------------------------------------------------

def played(episode):
    return [(t.observation, t.action, t.reward, t.terminated, t.truncated) for t in episode.turns]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_episodes_running_at_the_deadline_carry_over_and_each_is_returned_once(mode):
    plans = [[10 * step + k for k in range(3)] for step in range(20)]
    returned = []
    with make_vec("vector-test:Sleepy-v0", 3, mode=mode, seed=0, delay=0.03, length=None) as vec:
        for version, plan in enumerate(plans):
            returned += gem_core.collect_episodes(vec, echo, 3, seed=plan, deadline=0.15, carry_over=True,
                                                  policy_version=version)
            if len(returned) >= 12 and vec.carried is None:
                break
        assert vec.carried is None or len(vec.carried) <= 3
    seeds = [e.seed for e in returned]
    assert len(seeds) == len(set(seeds)) >= 12  # each returned exactly once
    valid = [e for e in returned if e.valid]
    if mode == "async":
        assert valid == returned and all(e.outcome == "completed" for e in returned)
    else:  # a call running at the deadline cannot be left running: its episode fails
        assert all(e.failure.kind == "deadline" and e.failure.phase == "step" for e in returned if not e.valid)
        assert len(valid) >= len(returned) / 3
    with gem_core.make_vec(lambda: Countdown(None), 1) as plain:
        for episode in valid:  # the same episodes as without a deadline
            assert played(episode) == played(gem_core.collect_episodes(plain, echo, 1, seed=[episode.seed])[0])
    versions = [[t.policy_version for t in e.turns] for e in valid]
    assert all(v == sorted(v) for v in versions)
    assert any(len(set(v)) > 1 for v in versions)  # some episodes were sampled by several versions


def test_carried_over_calls_in_flight_come_back_in_the_next_collection():
    with gem_core.make_vec([lambda: Sleepy(0.4, length=2)] * 2, mode="async") as vec:
        first = gem_core.collect_episodes(vec, echo, 2, seed=[1, 2], deadline=0.2, carry_over=True, policy_version=0)
        assert first == [] and len(vec.carried) == 2 and vec.in_flight == [0, 1]
        second = gem_core.collect_episodes(vec, echo, 2, seed=[3, 4], deadline=30, carry_over=True, policy_version=1)
    assert [e.seed for e in second] == [1, 2]  # they count towards the second's episodes
    assert all([t.policy_version for t in e.turns] == [0, 1] for e in second)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_spares_keep_the_first_episodes_to_end_and_reset_the_rest(mode):
    lengths = {}
    for seed in range(40):
        env = Countdown(None)
        env.reset(seed=seed)
        lengths.setdefault(env.episode_length, seed)
    plan = [lengths[n] for n in (6, 1, 5, 2, 4)]  # episodes of 6, 1, 5, 2 and 4 turns
    with make_vec(COUNTDOWN := "vector-test:Countdown-v0", 5, mode=mode, length=None) as vec:
        episodes = gem_core.collect_episodes(vec, echo, 3, seed=plan, spares=2)
        assert [e.num_turns for e in episodes] == [1, 2, 4]  # the first three to end, in the order they started
        assert vec.carried is None
        again = gem_core.collect_episodes(vec, echo, 5, seed=plan)  # the dropped ones' environments start afresh
    assert [e.num_turns for e in again] == [6, 1, 5, 2, 4] and all(e.valid for e in again)
    assert COUNTDOWN in {e.env_id for e in again}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_spares_in_groups_keep_the_first_whole_groups_to_end(mode):
    # three groups of two (each pair shares a seed); in each of the first two, one member is slow
    delays = [0.3, 0.01, 0.01, 0.3, 0.05, 0.05]
    plan = [1, 1, 2, 2, 3, 3]
    with gem_core.make_vec([lambda d=d: Sleepy(d, length=3) for d in delays], mode=mode) as vec:
        # an episode deadline lets concurrent slots go at their own pace
        split = gem_core.collect_episodes(vec, echo, 2, seed=plan, spares=4, episode_deadline=30)
        grouped = gem_core.collect_episodes(vec, echo, 2, seed=plan, spares=4, group_size=2, episode_deadline=30)
        whole = gem_core.collect_episodes(vec, echo, 6, seed=plan, group_size=2)
    if mode == "async":  # the first two to end are one member of each of the first two groups
        assert sorted(e.seed for e in split) == [1, 2]
    assert [e.seed for e in grouped] == [3, 3] if mode == "async" else [1, 1]
    assert [e.seed for e in whole] == plan and all(e.valid for e in grouped + whole)


@pytest.mark.parametrize("overrides", [{"group_size": 0}, {"group_size": 2}, {"group_size": 2, "spares": 1}])
def test_episodes_and_spares_that_are_not_whole_groups_are_refused(overrides):
    with make_vec("vector-test:Countdown-v0", 3, mode="sync") as vec:
        with pytest.raises(GemError, match="group_size"):
            gem_core.collect_episodes(vec, echo, 3 if "spares" not in overrides else 2, **overrides)


def test_a_spare_still_running_is_cancelled_without_a_warning(caplog):
    ids = ["vector-test:Sleepy-v0"] + ["vector-test:Countdown-v0"] * 3
    with make_vec(ids, mode="async", vec_kwargs=[{"delay": 1.0}, {}, {}, {}]) as vec:
        with caplog.at_level(logging.INFO, logger="gem_core.vector"):
            episodes = gem_core.collect_episodes(vec, echo, 3, spares=1, episode_deadline=30)
    assert [e.env_id for e in episodes] == ["vector-test:Countdown-v0"] * 3 and all(e.valid for e in episodes)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert any("step was cancelled" in r.getMessage() for r in caplog.records)


def test_spares_with_carry_over_continue_instead_of_being_dropped():
    with gem_core.make_vec(lambda: Countdown(None), 4, mode="async") as vec:
        first = gem_core.collect_episodes(vec, echo, 2, seed=[0, 1, 2, 3], spares=2, carry_over=True)
        assert len(first) == 2 and len(vec.carried) == 2
        second = gem_core.collect_episodes(vec, echo, 2, seed=[10, 11], carry_over=True)
        assert vec.carried is None
    # seeds 1 and 2 end first; seed 3 ends in the same round as seed 1 (kept for the next), seed 0 later
    assert [e.seed for e in first] == [1, 2] and [e.seed for e in second] == [0, 3]
    with gem_core.make_vec(lambda: Countdown(None), 1) as plain:
        for episode in second:  # continued where they were, not restarted
            assert played(episode) == played(gem_core.collect_episodes(plain, echo, 1, seed=[episode.seed])[0])


# ---- the in-flight collection keeps the guarantees of the plain one ---------------------------

@pytest.mark.parametrize("mode", CONCURRENT)
def test_with_a_deadline_collections_return_the_same_episodes(mode, request):
    if mode == "ray":
        request.getfixturevalue("ray_cluster")
    plan = [7, 7, 7, 20, 20, 20, 33, 33, 33, 46]
    with make_vec("vector-test:Countdown-v0", 3, mode=mode, length=None) as vec:
        plain = gem_core.collect_episodes(vec, echo, len(plan), seed=plan)
        timed = gem_core.collect_episodes(vec, echo, len(plan), seed=plan, deadline=60, episode_deadline=30)
        cut = gem_core.collect_episodes(vec, echo, len(plan), seed=plan, deadline=60, max_turns=2)
    assert sorted(map(played, plain)) == sorted(map(played, timed))
    assert all(e.num_turns <= 2 for e in cut) and sorted(e.seed for e in cut) == sorted(plan)


def test_flaky_resets_are_retried_under_a_deadline_too():
    with make_vec("vector-test:SeedSensitive-v0", 4, mode="async", seed=0) as vec:
        episodes = gem_core.collect_episodes(vec, echo, 24, deadline=60)
    assert len(episodes) == 24 and not vec.quarantined
    assert all(e.seed % 3 for e in episodes) and len({e.seed for e in episodes}) == 24


def test_threads_left_by_hung_calls_end_once_their_environments_close():
    before = threading.active_count()
    with gem_core.make_vec([lambda s=s: Stalling(stall_seed=s, turn=1) for s in range(4)], mode="async", seed=0) as vec:
        episodes = gem_core.collect_episodes(vec, echo, 4, episode_deadline=0.5)
    assert [e.failure.kind for e in episodes] == ["deadline"] * 4
    deadline = time.monotonic() + 10
    while threading.active_count() > before + 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= before + 1

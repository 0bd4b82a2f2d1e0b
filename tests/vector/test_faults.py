"""Fault isolation: environments that raise, hang, run slow or return garbage.

The ledger test replays every row a vector environment returns and checks that each episode
started (a row with ``episode_seed``) ends exactly once (a row with a done flag), and that no
row ends an episode that was not running.
"""

import asyncio
import itertools
import random

import pytest

import gem_core
from gem_core.vector import EPISODE_SEED, FAULT, FINAL_INFO, FINAL_OBSERVATION
from tests.helpers import LoopTicks
from tests.vector.conftest import make_vec
from tests.vector.envs import Countdown, Faulty, NativeAsync

MODES = ["sync", "async", "ray"]
IN_PROCESS = ["sync", "async"]
TIMEOUT = 0.3
COUNTDOWN, FAULTY, FAULTY_ONCE = "vector-test:Countdown-v0", "vector-test:Faulty-v0", "vector-test:FaultyOnce-v0"


def vec_of(factories, mode, **kwargs):
    return gem_core.make_vec(factories, mode=mode, **kwargs)


def slots_of(mode, *slots, **kwargs):
    """A vector environment of registered test environments: each slot an ``(id, keywords)`` pair."""
    return make_vec([env_id for env_id, _ in slots], mode=mode, vec_kwargs=[k for _, k in slots], **kwargs)


def token(request):
    """A name no other test uses, for FaultyOnce."""
    return request.node.nodeid


def test_a_step_that_raises_ends_that_episode_truncated_and_the_others_go_on(mode):
    # call 1 is the reset, call 2 the first step
    with slots_of(mode, (COUNTDOWN, {}), (FAULTY, {"faults": {2: "raise"}}), (COUNTDOWN, {})) as vec:
        vec.reset()
        faulty = vec.envs[1]
        obs, rewards, term, trunc, infos = vec.step(["a", "b", "c"])
        assert obs[1] == "" and rewards[1] == 0.0 and not term[1] and trunc[1]
        fault = infos[1][FAULT]
        assert fault["kind"] == "error" and fault["phase"] == "step"
        assert fault["error"] == "RuntimeError: injected failure at call 2"
        assert "injected failure" in fault["traceback"] and "Traceback" in fault["traceback"]
        assert obs[0].endswith("t1 got a") and obs[2].endswith("t1 got c") and not trunc[[0, 2]].any()
        obs, rewards, term, trunc, infos = vec.step(["d", "ignored", "e"])
        assert EPISODE_SEED in infos[1] and obs[1].startswith("start") and not trunc[1]
        assert vec.envs[1] is faulty or mode == "ray"  # an env that raised in step is kept and reset
        assert obs[0].endswith("t2 got d")
        obs, *_ = vec.step(["f", "g", "h"])
        assert obs[1].endswith("t1 got g")  # in Ray mode too: call 3 was the reset, 4 this step


@pytest.mark.parametrize("kind", ["hang", "slow", "malformed"])
def test_hang_slow_and_malformed_steps(mode, kind, request):
    # only the first instance misbehaves, not its replacement
    with slots_of(mode, (COUNTDOWN, {}), (FAULTY_ONCE, {"faults": {2: kind}, "token": token(request), "slow": 0.05}),
                  step_timeout=TIMEOUT) as vec:
        vec.reset()
        original = vec.envs[1]
        obs, rewards, term, trunc, infos = vec.step(["a", "b"])
        assert obs[0].endswith("t1 got a") and not trunc[0]
        if kind == "slow":  # within the timeout: a normal transition
            assert obs[1].endswith("t1 got b") and FAULT not in infos[1]
            return
        assert obs[1] == "" and trunc[1] and not term[1]
        fault = infos[1][FAULT]
        assert fault["phase"] == "step"
        if kind == "hang":
            assert fault["kind"] == "timeout" and fault["timeout_s"] == TIMEOUT
        else:
            assert fault["kind"] == "malformed" and "reward that is not a number" in fault["error"]
        obs, rewards, term, trunc, infos = vec.step(["c", "ignored"])
        assert EPISODE_SEED in infos[1] and obs[1].startswith("start")
        assert (vec.envs[1] is not original) == (kind == "hang") or mode == "ray"  # a hung env is replaced
        obs, *_ = vec.step(["d", "e"])
        assert obs[1].endswith("t1 got e")


def test_a_failed_autoreset_starts_no_episode_and_replaces_the_environment(mode, request):
    # length 1: call 1 reset, call 2 step (ends), call 3 the autoreset, which raises
    with slots_of(mode, (FAULTY_ONCE, {"faults": {3: "raise"}, "length": 1, "token": token(request)}),
                  (COUNTDOWN, {})) as vec:
        vec.reset()
        original = vec.envs[0]
        _, _, term, _, _ = vec.step(["a", "b"])
        assert term[0]
        obs, rewards, term, trunc, infos = vec.step(["ignored", "c"])
        assert obs[0] == "" and not term[0] and not trunc[0] and EPISODE_SEED not in infos[0]
        assert infos[0][FAULT]["phase"] == "reset" and vec.envs[0] is None
        obs, rewards, term, trunc, infos = vec.step(["ignored", "d"])
        assert EPISODE_SEED in infos[0] and (vec.envs[0] is not original or mode == "ray")
        obs, *_ = vec.step(["e", "f"])
        assert obs[0].endswith("t1 got e")  # a fresh environment: no fault at its call 3


def test_same_step_reset_that_hangs_still_ends_the_finished_episode(mode):
    with slots_of(mode, (FAULTY, {"faults": {3: "hang"}, "length": 1}), (COUNTDOWN, {}), autoreset="same_step",
                  step_timeout=TIMEOUT) as vec:
        _, infos = vec.reset()
        tag = infos[0]["tag"]
        obs, rewards, term, trunc, infos = vec.step(["a", "b"])
        assert term[0] and rewards[0] == 1.0 and obs[0] == ""
        assert infos[0][FINAL_OBSERVATION] == f"{tag} t1 got a" and infos[0][FINAL_INFO] == {"t": 1}
        assert infos[0][FAULT] | {"traceback": None} == {"kind": "timeout", "phase": "reset", "seed": 2,
                                                         "timeout_s": TIMEOUT, "traceback": None}
        obs, rewards, term, trunc, infos = vec.step(["ignored", "c"])
        assert EPISODE_SEED in infos[0] and not term[0] and rewards[0] == 0.0
        assert infos[0][EPISODE_SEED] == 4  # the slot's next seed: the failed one is not tried again


@pytest.mark.parametrize("step_timeout", [None, TIMEOUT])
def test_same_step_reset_that_raises_still_ends_the_finished_episode(mode, step_timeout):
    with slots_of(mode, (FAULTY, {"faults": {3: "raise"}, "length": 1}), (COUNTDOWN, {}), autoreset="same_step",
                  step_timeout=step_timeout) as vec:
        _, infos = vec.reset()
        obs, rewards, term, trunc, infos = vec.step(["a", "b"])
        assert term[0] and rewards[0] == 1.0 and obs[0] == "" and EPISODE_SEED not in infos[0]
        assert infos[0][FINAL_OBSERVATION].endswith("t1 got a")
        assert infos[0][FAULT]["phase"] == "reset" and "call 3" in infos[0][FAULT]["error"]
        obs, rewards, term, trunc, infos = vec.step(["ignored", "c"])
        assert EPISODE_SEED in infos[0] and obs[0].startswith("start")


class HangingAsync(NativeAsync):
    async def astep(self, action):
        if action == "hang":
            await asyncio.sleep(60)
        return await super().astep(action)


@pytest.mark.parametrize("mode", IN_PROCESS)
def test_a_native_async_step_past_the_timeout_is_cancelled(mode):
    with vec_of([HangingAsync, HangingAsync], mode, step_timeout=TIMEOUT) as vec:
        vec.reset()
        obs, rewards, term, trunc, infos = vec.step(["hang", "fine"])
        assert infos[0][FAULT]["kind"] == "timeout" and trunc[0]
        assert obs[1].endswith("t1 got fine")


def random_faults(rng):
    return {call: rng.choice(["raise", "hang", "slow", "malformed"])
            for call in rng.sample(range(2, 40), 4)}


@pytest.mark.parametrize("mode, autoreset, timeout", [
    *itertools.product(MODES, ["next_step", "same_step"], [TIMEOUT]),
    *itertools.product(MODES, ["next_step", "same_step"], [None]),  # inline calls, no hangs
])
def test_ledger_every_started_episode_ends_exactly_once(mode, autoreset, timeout, request):
    if mode == "ray":
        request.getfixturevalue("ray_cluster")
    rng = random.Random(f"{mode}{autoreset}{timeout}")
    schedules = [random_faults(rng) if slot % 2 else {} for slot in range(6)]
    schedules[1][2] = "hang"  # at least one of each kind
    schedules[3][2] = "raise"
    if timeout is None:
        schedules = [{k: "raise" if v == "hang" else v for k, v in s.items()} for s in schedules]
    slots = [(FAULTY, {"faults": s, "length": None, "slow": 0.01}) for s in schedules]
    open_episode, started, ended, faults = {}, [], [], []

    def account(slots, infos, done):
        for slot, info, is_done in zip(slots, infos, done):
            if FAULT in info:
                faults.append(info[FAULT]["kind"])
            if is_done:
                assert slot in open_episode, f"slot {slot} ended an episode that was not running"
                ended.append(open_episode.pop(slot))
            if EPISODE_SEED in info:
                assert slot not in open_episode, f"slot {slot} started an episode over a running one"
                open_episode[slot] = info[EPISODE_SEED]
                started.append(info[EPISODE_SEED])

    with slots_of(mode, *slots, autoreset=autoreset, step_timeout=timeout) as vec:
        _, infos = vec.reset()
        account(range(6), infos, [False] * 6)
        for step in range(40):
            slots = sorted(rng.sample(range(6), rng.randint(1, 6)))  # subsets too
            obs, rewards, term, trunc, infos = vec.step(["x"] * len(slots), indices=slots)
            account(slots, infos, term | trunc)
    assert len(ended) == len(set(ended)), "an episode ended twice"
    assert sorted(ended + list(open_episode.values())) == sorted(started), "an episode was lost"
    assert len(ended) > 20  # and the slots kept making progress
    kinds = {"error", "malformed", "timeout"} if timeout else {"error", "malformed"}
    assert kinds - {"malformed"} <= set(faults) <= kinds


def test_collect_episodes_through_faults_returns_each_episode_once(mode):
    schedules = [{}, {2: "raise", 9: "hang"}, {4: "malformed", 6: "slow"}]
    with slots_of(mode, *[(FAULTY, {"faults": s, "length": 3}) for s in schedules], step_timeout=TIMEOUT) as vec:
        episodes = gem_core.collect_episodes(vec, lambda obs: ["x"] * len(obs), 12)
    assert len(episodes) == 12 and len({e.seed for e in episodes}) == 12
    assert all(e.done for e in episodes)
    faulted = [e for e in episodes if FAULT in e.turns[-1].info]
    assert {e.turns[-1].info[FAULT]["kind"] for e in faulted} == {"error", "malformed", "timeout"}
    assert all(e.turns[-1].truncated and e.final_observation == "" for e in faulted)
    # each says how it failed, and leaves the estimator's statistics
    assert [e.outcome for e in faulted] == ["failed"] * len(faulted)
    assert [e.failure.kind for e in faulted] == [e.turns[-1].info[FAULT]["kind"] for e in faulted]
    assert all(e.failure.turn == e.num_turns - 1 and e.failure.phase == "step" for e in faulted)
    clean = [e for e in episodes if e not in faulted]
    assert all(e.outcome == "completed" and e.valid for e in clean)
    assert all(e.num_turns == 3 and e.turns[-1].terminated for e in clean)


def test_astep_reports_a_hung_threaded_call_without_blocking_the_loop():
    schedules = iter([{2: "hang"}])

    async def main():
        with vec_of([Countdown, lambda: Faulty(next(schedules, {}))], "async", step_timeout=TIMEOUT) as vec:
            await vec.areset()
            async with LoopTicks(0.01) as ticks:
                first = await vec.astep(["a", "b"])
                second = await vec.astep(["c", "ignored"])
            return first, second, ticks.count

    (obs, _, term, trunc, infos), second, ticks = asyncio.run(main())
    assert infos[1][FAULT]["kind"] == "timeout" and trunc[1] and obs[0].endswith("t1 got a")
    assert EPISODE_SEED in second[4][1]
    assert ticks > 5  # the loop went on while the thread hung

"""collect_episodes: exactly N complete episodes, with sync and async policies."""

import asyncio
import itertools
import re

import pytest

import gem_core
from gem_core import GemError
from gem_core.episodes import Episode
from tests.vector.conftest import make_vec
from tests.vector.envs import Countdown, Faulty, SeedSensitive

COUNTDOWN, FAULTY, SEED_SENSITIVE = "vector-test:Countdown-v0", "vector-test:Faulty-v0", "vector-test:SeedSensitive-v0"


def binary_search(observations):
    """A deterministic GuessTheNumber agent that reads the whole history (concat wrapper)."""
    actions = []
    for text in observations:
        low, high = map(int, re.search(r"from (\d+) to (\d+)", text).groups())
        for guess, direction in re.findall(r"you guessed (\d+); the number is (higher|lower)", text):
            if direction == "higher":
                low = max(low, int(guess) + 1)
            else:
                high = min(high, int(guess) - 1)
        actions.append(f"\\boxed{{{(low + high) // 2}}}")
    return actions


def replay(episode, make_env):
    """The episode's turns, re-run on a fresh environment from its seed."""
    env = make_env()
    observation, _ = env.reset(seed=episode.seed)
    turns = []
    for turn in episode.turns:
        turns.append((observation, turn.action))
        observation, reward, terminated, truncated, _ = env.step(turn.action)
        turns[-1] += (reward, terminated, truncated)
    return turns, observation


def test_collects_exactly_n_complete_episodes_that_replay_from_their_seeds(mode):
    with make_vec(COUNTDOWN, 3, mode=mode, seed=40, length=None) as vec:
        episodes = gem_core.collect_episodes(vec, lambda obs: [o[-3:] for o in obs], 7)
    assert len(episodes) == 7 and all(isinstance(e, Episode) and e.done for e in episodes)
    assert sorted(e.seed for e in episodes) == sorted(set(e.seed for e in episodes))
    assert [e.seed for e in episodes[:3]] == [40, 41, 42]  # in the order they started
    for episode in episodes:
        turns, final = replay(episode, lambda: Countdown(None))
        assert [(t.observation, t.action, t.reward, t.terminated, t.truncated) for t in episode.turns] == turns
        assert episode.final_observation == final and episode.env_id == COUNTDOWN


def test_episodes_are_the_same_in_every_mode_and_autoreset(ray_cluster):
    results = {}
    for mode, autoreset in itertools.product(["sync", "async", "ray"], ["next_step", "same_step"]):
        with make_vec("game:GuessTheNumber-v0-hard", 4, wrappers="concat", mode=mode,
                      autoreset=autoreset, seed=1) as vec:
            episodes = gem_core.collect_episodes(vec, binary_search, 10)
        results[mode, autoreset] = [e.to_dict() for e in episodes]
    for autoreset in ("next_step", "same_step"):  # every mode: the same, in the same order
        assert results["sync", autoreset] == results["async", autoreset] == results["ray", autoreset]
    # Next-step autoreset spends a step on each reset, so episodes may start in another order;
    # they are the same episodes.
    by_seed = [sorted(r, key=lambda e: e["seed"]) for r in results.values()]
    assert all(r == by_seed[0] for r in by_seed)
    assert sum(e["turns"][-1]["reward"] == 1.0 for e in by_seed[0]) == 10  # binary search wins in 7


def test_fewer_episodes_than_slots_starts_only_those():
    with gem_core.make_vec(lambda: Countdown(2), 5) as vec:
        episodes = gem_core.collect_episodes(vec, lambda obs: ["a"] * len(obs), 2)
        assert [e.seed for e in episodes] == [0, 1]
        assert [env.tag for env in vec.envs[2:]] == [0, 0, 0]  # never reset, never stepped
        assert all(env.t == 0 for env in vec.envs[2:])


class CountingResets(Countdown):
    resets = 0

    def reset(self, seed=None, **options):
        CountingResets.resets += 1
        return super().reset(seed)


def test_no_episode_is_started_beyond_the_target():
    CountingResets.resets = 0
    with gem_core.make_vec(lambda: CountingResets(None), 4) as vec:
        episodes = gem_core.collect_episodes(vec, lambda obs: ["a"] * len(obs), 9)
    assert len(episodes) == 9 and CountingResets.resets == 9


def test_async_policy_from_sync_code_and_acollect_from_a_coroutine():
    async def policy(observations):
        await asyncio.sleep(0)
        return [o[-1] for o in observations]

    with gem_core.make_vec(lambda: Countdown(2), 2, mode="async") as vec:
        from_sync = gem_core.collect_episodes(vec, policy, 4)

    async def main():
        with gem_core.make_vec(lambda: Countdown(2), 2, mode="async") as vec:
            with_async = await gem_core.acollect_episodes(vec, policy, 4)
            with_sync = await gem_core.acollect_episodes(vec, lambda obs: [o[-1] for o in obs], 4, seed=0)
        return with_async, with_sync

    with_async, with_sync = asyncio.run(main())
    assert [e.to_dict() for e in from_sync] == [e.to_dict() for e in with_async] == [e.to_dict() for e in with_sync]


@pytest.mark.parametrize("autoreset", ["next_step", "same_step"])
def test_max_turns_cuts_episodes_off_and_starts_fresh_ones(autoreset):
    with gem_core.make_vec(lambda: Countdown(10), 2, autoreset=autoreset) as vec:
        episodes = gem_core.collect_episodes(vec, lambda obs: ["a"] * len(obs), 5, max_turns=3)
    assert [e.num_turns for e in episodes] == [3] * 5
    assert all(e.turns[-1].truncated and not e.turns[-1].terminated for e in episodes)
    assert [e.seed for e in episodes] == [0, 1, 2, 3, 4]
    assert all(e.turns[0].observation.startswith("start") for e in episodes)


def test_progress_bar(capsys):
    with gem_core.make_vec(lambda: Countdown(1), 2) as vec:
        episodes = gem_core.collect_episodes(vec, lambda obs: ["a"] * len(obs), 3, progress=True)
    assert len(episodes) == 3
    assert "3/3" in capsys.readouterr().out


@pytest.mark.parametrize("policy, message", [
    (lambda obs: ["a"], "1 actions for 2 observations"),
    (lambda obs: "a", "return a list of action strings"),
    (lambda obs: [1, 2], "returned int as action 0"),
])
def test_bad_policy_output_raises(policy, message):
    with gem_core.make_vec(lambda: Countdown(2), 2) as vec:
        with pytest.raises(GemError, match=message):
            gem_core.collect_episodes(vec, policy, 2)


def test_bad_arguments_raise():
    with gem_core.make_vec(Countdown, 1) as vec:
        for kwargs, message in [({"num_episodes": 0}, "num_episodes"),
                                ({"num_episodes": 1, "max_turns": 0}, "max_turns")]:
            with pytest.raises(GemError, match=message):
                gem_core.collect_episodes(vec, lambda obs: obs, **kwargs)
    with pytest.raises(GemError, match="make_vec"):
        gem_core.collect_episodes(Countdown(), lambda obs: obs, 1)


def test_a_slot_that_keeps_failing_to_reset_is_quarantined_and_collection_goes_on():
    with gem_core.make_vec([Countdown, lambda: Faulty({1: "raise"})]) as vec:
        episodes = gem_core.collect_episodes(vec, lambda obs: ["a"] * len(obs), 20)
        assert len(episodes) == 20 and {e.env_id for e in episodes} == {"Countdown"}
        report = vec.quarantined[1]
        assert report["env_id"] == "Faulty" and report["seeds"] == [1, 3, 5]  # a fresh seed each time
        assert all("injected failure" in error for error in report["errors"])
        assert vec.healthy_slots == [0]
        with pytest.raises(GemError, match=r"Slot 1 \(Faulty\) is quarantined"):
            vec.step(["a", "b"])
        assert len(gem_core.collect_episodes(vec, lambda obs: ["a"] * len(obs), 3)) == 3  # healthy slots only


def test_collection_raises_when_no_healthy_slot_remains():
    with gem_core.make_vec([lambda: Faulty({1: "raise"})] * 2) as vec:
        with pytest.raises(GemError, match=r"No healthy slot is left.*slot 0 \(Faulty\): seeds \[0, 2, 4\]"):
            gem_core.collect_episodes(vec, lambda obs: ["a"] * len(obs), 5)


def test_flaky_resets_are_retried_with_fresh_seeds(mode):
    with make_vec(SEED_SENSITIVE, 4, mode=mode, seed=0) as vec:
        episodes = gem_core.collect_episodes(vec, lambda obs: ["a"] * len(obs), 24)
    assert len(episodes) == 24 and not vec.quarantined
    assert all(e.seed % 3 for e in episodes) and len({e.seed for e in episodes}) == 24


def test_too_large_a_share_of_failed_resets_raises():
    with gem_core.make_vec(lambda: SeedSensitive(period=1), 4) as vec:
        with pytest.raises(GemError, match=r"resets failed, more than the allowed share \(0.5"):
            gem_core.collect_episodes(vec, lambda obs: ["a"] * len(obs), 8, max_reset_failures=100,
                                      reset_backoff=0)


def test_half_the_slots_faulty_still_gives_every_episode(mode):
    """Step errors, a hang past step_timeout, malformed results and resets failing a third of the
    time: every episode asked for still comes back."""
    slots = [(COUNTDOWN, {})] * 4 + [(FAULTY, {"faults": {2: "raise", 7: "raise"}}), (FAULTY, {"faults": {3: "hang"}}),
                                     (FAULTY, {"faults": {2: "malformed"}}), (SEED_SENSITIVE, {})]
    with make_vec([i for i, _ in slots], mode=mode, vec_kwargs=[k for _, k in slots], step_timeout=0.5) as vec:
        episodes = gem_core.collect_episodes(vec, lambda obs: ["a"] * len(obs), 40)
    assert len(episodes) == 40
    assert sum(e.turns[-1].truncated for e in episodes) >= 3  # the faulty steps ended their episodes


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_policy_taking_infos_gets_each_observations_info(asynchronous):
    seen = []

    def policy(observations, infos):
        seen.extend(zip(observations, infos))
        return ["\\boxed{5}"] * len(observations)

    async def apolicy(observations, *, infos):
        return policy(observations, infos)

    vec = gem_core.make_vec("game:GuessTheNumber-v0-easy", 2)
    try:
        episodes = gem_core.collect_episodes(vec, apolicy if asynchronous else policy, 3, seed=0)
    finally:
        vec.close()
    first = [(o, i) for o, i in seen if "episode_seed" in i]
    assert len(first) == 3 and {i["episode_seed"] for _, i in first} == {e.seed for e in episodes}
    later = [(o, i) for o, i in seen if "episode_seed" not in i]
    assert all("turn" in info for _, info in later)  # a step's info, with the game's turn count


@pytest.mark.parametrize("autoreset", ["next_step", "same_step"])
def test_a_list_of_seeds_plays_exactly_those_episodes_whatever_the_timing(mode, autoreset):
    # Countdown draws each episode's length from its seed: slots end at different times, so a
    # slot's own seed sequence would play other seeds than these.
    plan = [7, 7, 7, 20, 20, 20, 33, 33, 33, 46]
    with make_vec(COUNTDOWN, 3, mode=mode, autoreset=autoreset, length=None) as vec:
        episodes = gem_core.collect_episodes(vec, lambda obs: ["a"] * len(obs), len(plan), seed=plan)
    assert sorted(e.seed for e in episodes) == sorted(plan)
    by_seed = {}
    for episode in episodes:  # episodes from one seed start in the same state and play alike
        by_seed.setdefault(episode.seed, []).append([(t.observation, t.reward) for t in episode.turns])
    assert all(len({repr(turns) for turns in runs}) == 1 for runs in by_seed.values())


def test_a_failed_planned_start_takes_the_next_planned_seed():
    with gem_core.make_vec(lambda: SeedSensitive(), 2) as vec:
        episodes = gem_core.collect_episodes(vec, lambda obs: ["a"] * len(obs), 4, seed=[1, 3, 4, 5, 7, 8])
    # SeedSensitive cannot start seed 3: the next planned seed took its place, none of the slot's own
    assert sorted(e.seed for e in episodes) == [1, 4, 5, 7]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_policy_taking_episodes_gets_the_episode_of_each_observation(asynchronous):
    seen: dict[int, list[int]] = {}  # id of the episode -> the number of turns it had at each call

    def policy(observations, episodes):
        assert len(episodes) == len(observations)
        for episode in episodes:
            seen.setdefault(id(episode), []).append(episode.num_turns)
        return ["a"] * len(observations)

    async def apolicy(observations, *, episodes):
        return policy(observations, episodes)

    finished = []
    with gem_core.make_vec(lambda: Countdown(3), 2) as vec:
        episodes = gem_core.collect_episodes(vec, apolicy if asynchronous else policy, 4, on_episode=finished.append)
    assert sorted(map(id, episodes)) == sorted(seen) == sorted(map(id, finished))  # the same objects
    assert all(counts == [0, 1, 2] for counts in seen.values())  # asked at every turn, as it grew


class StreamingSearch:
    """binary_search, handing its actions over a few at a time, last observation first, and
    noting what the vector environment stepped before each hand-over."""

    def __init__(self, vec):
        self.vec, self.log = vec, []

    def __call__(self, observations):
        raise AssertionError("collect_episodes should use stream_actions()")

    def stream_actions(self, observations, infos):
        actions = binary_search(observations)
        positions = list(range(len(observations)))[::-1]
        for start in range(0, len(positions), 2):
            chunk = positions[start:start + 2]
            self.log.append(len(self.vec.stepped))
            yield chunk, [actions[p] for p in chunk]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_streaming_policy_has_its_slots_stepped_as_its_actions_come_and_the_same_episodes(mode):
    def collect(streaming: bool) -> list:
        with make_vec("game:GuessTheNumber-v0-hard", 5, wrappers="concat", mode=mode, seed=3) as vec:
            stepped = []
            step = vec.step
            vec.step = lambda actions, indices=None: (stepped.append(len(indices)), step(actions, indices))[1]
            vec.stepped = stepped
            policy = StreamingSearch(vec) if streaming else binary_search
            episodes = gem_core.collect_episodes(vec, policy, 12)
        return episodes, stepped, getattr(policy, "log", None)

    plain, _, _ = collect(False)
    streamed, stepped, log = collect(True)
    assert [e.to_dict() for e in streamed] == [e.to_dict() for e in plain]
    assert max(stepped) <= 2  # chunks of at most two slots, stepped one chunk at a time
    assert all(later > earlier for earlier, later in zip(log, log[1:]))  # each chunk stepped before the next came


@pytest.mark.parametrize("stream, message", [
    (lambda obs, infos: iter([([0, 0], ["a", "b"])]), "positions"),
    (lambda obs, infos: iter([([0], ["a"])]), "ended without actions"),
    (lambda obs, infos: iter([([0], [7])]), "action 0"),
    (lambda obs, infos: iter([([len(obs)], ["a"])]), "positions"),
])
def test_a_stream_that_breaks_its_contract_raises(stream, message):
    policy = type("Streaming", (), {"__call__": lambda self, obs: ["a"] * len(obs), "stream_actions": staticmethod(stream)})()
    with make_vec(COUNTDOWN, 2, mode="sync", seed=0) as vec:
        with pytest.raises(GemError, match=message):
            gem_core.collect_episodes(vec, policy, 2)

"""Autoreset semantics, batched results and seeds, in every mode (the ``mode`` fixture)."""

import random

import numpy as np
import pytest

import gem_core
from gem_core.vector import EPISODE_SEED, FINAL_INFO, FINAL_OBSERVATION
from tests.vector.conftest import make_vec
from tests.vector.envs import Countdown

COUNTDOWN = "vector-test:Countdown-v0"


def first_observation(seed, length=2, truncate=False):
    return Countdown(length, truncate).reset(seed=seed)[0]


@pytest.mark.parametrize("truncate", [False, True])
def test_next_step_returns_the_terminal_transition_then_resets_on_the_next_step(mode, truncate):
    vec = make_vec(COUNTDOWN, 2, mode=mode, seed=10, length=2, truncate=truncate)
    observations, infos = vec.reset()
    assert observations == [first_observation(10), first_observation(11)]
    assert [i[EPISODE_SEED] for i in infos] == [10, 11]
    tag = infos[0]["tag"]

    obs, rewards, term, trunc, infos = vec.step(["a", "b"])
    assert obs[0] == f"{tag} t1 got a" and infos[0] == {"t": 1}
    assert rewards.tolist() == [1.0, 1.0] and not term.any() and not trunc.any()

    obs, rewards, term, trunc, infos = vec.step(["c", "d"])
    assert obs[0] == f"{tag} t2 got c"  # the terminal observation is returned as is
    assert rewards.tolist() == [2.0, 2.0]
    assert (trunc if truncate else term).all() and not (term if truncate else trunc).any()
    assert infos[0] == {"t": 2}  # no reset information mixed in

    obs, rewards, term, trunc, infos = vec.step(["ignored", "ignored"])
    assert obs == [first_observation(12), first_observation(13)]  # seed + i + num_envs
    assert rewards.tolist() == [0.0, 0.0] and not term.any() and not trunc.any()
    assert [i[EPISODE_SEED] for i in infos] == [12, 13]
    assert "ignored" not in obs[0]

    obs, *_ = vec.step(["e", "f"])
    assert obs[1].endswith("t1 got f")
    vec.close()


def test_same_step_keeps_the_terminal_observation_and_info_under_documented_keys(mode):
    vec = make_vec(COUNTDOWN, 2, mode=mode, autoreset="same_step", seed=10, length=2)
    _, infos = vec.reset()
    tag = infos[0]["tag"]
    vec.step(["a", "b"])
    obs, rewards, term, trunc, infos = vec.step(["c", "d"])
    assert obs == [first_observation(12), first_observation(13)]  # the next episode's start
    assert rewards.tolist() == [2.0, 2.0] and term.all() and not trunc.any()
    assert infos[0][FINAL_OBSERVATION] == f"{tag} t2 got c"
    assert infos[0][FINAL_INFO] == {"t": 2}
    assert infos[0][EPISODE_SEED] == 12 and "tag" in infos[0]  # the reset info of the new episode
    obs, rewards, term, *_ = vec.step(["e", "f"])
    assert obs[0].endswith("t1 got e") and rewards.tolist() == [1.0, 1.0] and not term.any()
    vec.close()


def expected_rows(env_id, seeds, actions, autoreset, num_envs):
    """What the vector environment must return, computed with standalone environments."""
    envs = [gem_core.make(env_id) for _ in seeds]
    for env, s in zip(envs, seeds):
        env.reset(seed=s)
    next_seed = [s + num_envs for s in seeds]
    rows, needs_reset = [], [False] * len(envs)
    for batch in actions:
        row = []
        for i, (env, action) in enumerate(zip(envs, batch)):
            if needs_reset[i]:
                obs, _ = env.reset(seed=next_seed[i])
                next_seed[i] += num_envs
                needs_reset[i] = False
                row.append((obs, 0.0, False, False))
                continue
            obs, reward, term, trunc, _ = env.step(action)
            if term or trunc:
                if autoreset == "same_step":
                    obs, _ = env.reset(seed=next_seed[i])
                    next_seed[i] += num_envs
                else:
                    needs_reset[i] = True
            row.append((obs, reward, term, trunc))
        rows.append(row)
    return rows


@pytest.mark.parametrize("autoreset", ["next_step", "same_step"])
def test_long_run_matches_standalone_environments(mode, autoreset):
    env_id, n = "game:GuessTheNumber-v0-easy", 3
    rng = random.Random(0)
    actions = [[f"\\boxed{{{rng.randint(0, 11)}}}" for _ in range(n)] for _ in range(60)]
    expected = expected_rows(env_id, [5, 6, 7], actions, autoreset, n)
    with make_vec(env_id, n, mode=mode, autoreset=autoreset, seed=5) as vec:
        vec.reset()
        for batch, want in zip(actions, expected):
            obs, rewards, term, trunc, infos = vec.step(batch)
            assert isinstance(rewards, np.ndarray) and rewards.dtype == np.float64
            assert term.dtype == np.bool_ and trunc.dtype == np.bool_
            got = list(zip(obs, rewards.tolist(), term.tolist(), trunc.tolist()))
            assert got == want


def test_seeds_per_slot_are_reproducible_and_replayable(mode):
    def transcript(vec, steps=25):
        out = [vec.reset()]
        rng = random.Random(3)
        for _ in range(steps):
            obs, rewards, term, trunc, infos = vec.step([str(rng.randint(0, 9)) for _ in range(vec.num_envs)])
            out.append((obs, rewards.tolist(), term.tolist(), infos))
        return out

    make = lambda seed: make_vec(COUNTDOWN, 4, mode=mode, seed=seed, length=None)  # noqa: E731
    with make(3) as a, make(3) as b, make(4) as c:
        assert transcript(a) == transcript(b)
        assert transcript(a) != transcript(c)

    with make(100) as vec:
        obs, infos = vec.reset()
        assert [i[EPISODE_SEED] for i in infos] == [100, 101, 102, 103]
        seen = {}
        for _ in range(30):
            obs, *_, infos = vec.step(["x"] * 4)
            for slot, (o, info) in enumerate(zip(obs, infos)):
                if EPISODE_SEED in info:
                    assert info[EPISODE_SEED] not in seen  # every episode has its own seed
                    seen[info[EPISODE_SEED]] = (slot, o)
        assert len(seen) > 8
        for seed, (slot, observation) in seen.items():
            assert (seed - 100) % 4 == slot
            assert Countdown(None).reset(seed=seed)[0] == observation  # and replays


def test_reset_seed_forms_and_group_alignment():
    with gem_core.make_vec(lambda: Countdown(1), 4, seed=0) as vec:
        obs, infos = vec.reset(seed=[7, 7, 9, 9])
        assert obs[0] == obs[1] != obs[2] == obs[3]
        vec.step(["a"] * 4)
        obs, *_, infos = vec.step(["b"] * 4)  # autoreset keeps equal seeds equal
        assert [i[EPISODE_SEED] for i in infos] == [11, 11, 13, 13]
        assert obs[0] == obs[1] and obs[2] == obs[3]
        obs, infos = vec.reset(seed=50)
        assert [i[EPISODE_SEED] for i in infos] == [50, 51, 52, 53]
        obs, infos = vec.reset()  # continues each slot's sequence
        assert [i[EPISODE_SEED] for i in infos] == [54, 55, 56, 57]
        for bad in ("7", [1, 2], 1.5, [1, 2, 3, "4"]):
            with pytest.raises(gem_core.GemError, match="seed"):
                vec.reset(seed=bad)

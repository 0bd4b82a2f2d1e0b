import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import gem_core
from gem_core.estimators import (
    EPS,
    EstimatorInputError,
    rebn,
    rebn_flat,
    reinforce,
    reinforce_baseline,
    reinforce_baseline_flat,
)
from tests.estimators.loops import rebn_loop, returns_loop

rewards = st.floats(-1000, 1000, allow_nan=False)
episodes = st.lists(st.lists(rewards, min_size=1, max_size=12), min_size=1, max_size=10)
gammas = st.sampled_from([0.0, 0.5, 0.9, 1.0])


def flat(arrays):
    return np.concatenate(arrays)


def test_rebn_hand_computed_gamma_1():
    # returns [1, 1] and [0]: mean 2/3, population std sqrt(2)/3
    got = rebn([[0.0, 1.0], [0.0]], gamma=1.0)
    std = np.sqrt(2) / 3
    assert np.allclose(flat(got), np.array([1 / 3, 1 / 3, -2 / 3]) / (std + EPS))
    assert [len(a) for a in got] == [2, 1]


def test_rebn_hand_computed_gamma_09():
    # returns [0.9, 1] and [1]: mean 2.9/3
    got = rebn([[0.0, 1.0], [1.0]], gamma=0.9)
    g = np.array([0.9, 1.0, 1.0])
    assert np.allclose(flat(got), (g - g.mean()) / (g.std() + EPS))
    assert np.allclose(flat(got), [-np.sqrt(2), np.sqrt(2) / 2, np.sqrt(2) / 2], atol=1e-4)


def test_rebn_hand_computed_gamma_0():
    # returns are the rewards: [0, 1, 0, 1] -> mean 0.5, std 0.5
    got = rebn([[0.0, 1.0, 0.0], [1.0]], gamma=0)
    assert np.allclose(flat(got), np.array([-0.5, 0.5, -0.5, 0.5]) / (0.5 + EPS))


def test_rebn_one_episode():
    got = rebn([[1.0, 2.0, 3.0]], gamma=1.0)  # returns 6, 5, 3
    g = np.array([6.0, 5.0, 3.0])
    assert len(got) == 1 and np.allclose(got[0], (g - g.mean()) / (g.std() + EPS))


@pytest.mark.parametrize("batch", [[[0.5]], [[0.1], [0.1], [0.1]], [[0.0, 0.3], [0.3]], [[1e12], [1e12]]])
def test_equal_returns_give_exact_zeros(batch):
    for estimator in (rebn, reinforce_baseline):
        got = flat(estimator(batch, gamma=1.0))
        assert (got == 0).all(), got


def test_equal_returns_across_ranks_give_exact_zeros():
    ranks = [np.full(3, 0.1), np.full(7, 0.1)]
    results = simulate_ranks(rebn_flat, ranks, [np.ones(3, int), np.ones(7, int)], gamma=1.0)
    assert all((r == 0).all() for r in results)


def test_reinforce_is_the_discounted_return():
    batch = [[0.0, 0.0, 1.0], [-1.0, 2.0]]
    for gamma in (0.0, 0.9, 1.0):
        got = reinforce(batch, gamma=gamma)
        for a, expected in zip(got, returns_loop(batch, gamma)):
            assert np.allclose(a, expected)


def test_reinforce_baseline_subtracts_the_batch_mean():
    got = reinforce_baseline([[0.0, 1.0], [0.0]], gamma=1.0)  # returns 1, 1, 0
    assert np.allclose(flat(got), [1 / 3, 1 / 3, -2 / 3])


@settings(max_examples=300, deadline=None)
@given(episodes, gammas)
def test_rebn_matches_a_per_turn_loop_and_is_never_nan(batch, gamma):
    got = rebn(batch, gamma=gamma)
    assert all(np.isfinite(a).all() for a in got)
    g = flat([np.array(r) for r in returns_loop(batch, gamma)])
    if g.std() > 1e-9 * max(1.0, abs(g.mean())):
        for a, expected in zip(got, rebn_loop(batch, gamma)):
            assert np.allclose(a, expected, rtol=1e-7, atol=1e-7)


@settings(max_examples=300, deadline=None)
@given(episodes, gammas)
def test_rebn_has_mean_0_and_std_1_when_returns_vary(batch, gamma):
    g = flat([np.array(r) for r in returns_loop(batch, gamma)])
    assume(g.std() > 1e-3)
    a = flat(rebn(batch, gamma=gamma))
    assert abs(a.mean()) < 1e-9
    assert a.std() == pytest.approx(g.std() / (g.std() + EPS), rel=1e-9)
    assert a.std() == pytest.approx(1.0, abs=1e-3)


@settings(max_examples=300, deadline=None)
@given(episodes, gammas, st.floats(1e-3, 1e3))
def test_rebn_is_unchanged_by_scaling_rewards(batch, gamma, scale):
    g = flat([np.array(r) for r in returns_loop(batch, gamma)])
    assume(g.std() > 1e-1)
    base = flat(rebn(batch, gamma=gamma))
    scaled = flat(rebn([[r * scale for r in episode] for episode in batch], gamma=gamma))
    # exact up to eps, which is negligible next to a std of at least 1e-4 after scaling
    assert np.allclose(scaled, base, rtol=1e-2, atol=1e-2)
    assert np.allclose(flat(rebn(batch, gamma=gamma, eps=0)),
                       flat(rebn([[r * scale for r in e] for e in batch], gamma=gamma, eps=0)), atol=1e-9)


def test_eps_is_an_option():
    got = rebn([[0.0], [1.0]], gamma=1.0, eps=0.5)  # std 0.5
    assert np.allclose(flat(got), [-0.5, 0.5])
    with pytest.raises(EstimatorInputError, match="eps"):
        rebn([[0.0], [1.0]], gamma=1.0, eps=-1)


def test_group_ids_are_accepted_and_unused():
    batch = [[0.0, 1.0], [0.0]]
    assert np.array_equal(flat(rebn(batch, gamma=1, group_ids=["a", "b"])), flat(rebn(batch, gamma=1)))


def test_flat_form_equals_nested_form():
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 9, 50)
    r = rng.normal(size=int(lengths.sum()))
    nested = np.split(r, np.cumsum(lengths)[:-1])
    assert np.allclose(rebn_flat(r, lengths, gamma=0.9), flat(rebn([list(e) for e in nested], gamma=0.9)))
    assert np.allclose(rebn.flat(r, lengths, gamma=0.9), rebn_flat(r, lengths, gamma=0.9))
    assert gem_core.get_estimator("rebn") is rebn


# --- data-parallel ranks: all_reduce sums over shards --------------------------------------------

def simulate_ranks(flat_estimator, shard_rewards, shard_lengths, **kwargs):
    """Run one estimator per shard in lockstep threads whose all_reduce sums across shards."""
    import threading

    barrier = threading.Barrier(len(shard_rewards))
    slots: dict = {}
    results: list = [None] * len(shard_rewards)

    def worker(rank):
        calls = 0

        def all_reduce(values):
            nonlocal calls
            slots[(calls, rank)] = values
            barrier.wait()
            total = sum(slots[(calls, r)] for r in range(len(shard_rewards)))
            barrier.wait()
            calls += 1
            return total

        try:
            results[rank] = flat_estimator(shard_rewards[rank], shard_lengths[rank], all_reduce=all_reduce, **kwargs)
        except Exception as e:  # noqa: BLE001 - handed to the test
            results[rank] = e

    threads = [threading.Thread(target=worker, args=(r,)) for r in range(len(shard_rewards))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a rank is stuck in all_reduce"
    return results


def test_all_reduce_gives_the_statistics_of_the_whole_batch():
    rng = np.random.default_rng(2)
    lengths = rng.integers(1, 6, 40)
    r = rng.normal(size=int(lengths.sum()))
    whole = rebn_flat(r, lengths, gamma=0.9)
    cut = int(lengths[:15].sum())
    shards = simulate_ranks(rebn_flat, [r[:cut], r[cut:], np.zeros(0)],
                            [lengths[:15], lengths[15:], np.zeros(0, int)], gamma=0.9)
    assert np.allclose(np.concatenate(shards), whole, rtol=1e-12, atol=1e-12)
    baseline = simulate_ranks(reinforce_baseline_flat, [r[:cut], r[cut:]], [lengths[:15], lengths[15:]], gamma=0.9)
    assert np.allclose(np.concatenate(baseline), reinforce_baseline_flat(r, lengths, gamma=0.9))


def test_bad_input_on_one_rank_raises_on_every_rank():
    good, bad = np.array([1.0, 2.0]), np.array([1.0, np.nan])
    results = simulate_ranks(rebn_flat, [good, bad], [[2], [2]], gamma=1.0)
    assert isinstance(results[1], EstimatorInputError) and "episode 0, turn 1" in str(results[1])
    assert isinstance(results[0], EstimatorInputError) and "1 data-parallel rank" in str(results[0])


def test_empty_on_every_rank_is_an_error():
    results = simulate_ranks(rebn_flat, [np.zeros(0), np.zeros(0)], [np.zeros(0, int)] * 2, gamma=1.0)
    assert all(isinstance(r, EstimatorInputError) and "empty" in str(r) for r in results)


def test_an_all_reduce_that_returns_nothing_is_a_clear_error():
    with pytest.raises(EstimatorInputError, match="all_reduce must return"):
        rebn([[1.0], [2.0]], gamma=1.0, all_reduce=lambda values: None)

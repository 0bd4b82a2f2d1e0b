import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gem_core.estimators import EstimatorInputError, discounted_returns, discounted_returns_flat
from gem_core.estimators.returns import scan_returns
from tests.estimators.loops import returns_loop

rewards = st.floats(-100, 100, allow_nan=False)
episodes = st.lists(st.lists(rewards, min_size=1, max_size=40), min_size=1, max_size=12)
gammas = st.one_of(st.sampled_from([0.0, 0.5, 0.9, 0.99, 1.0]), st.floats(0, 1))


def test_hand_computed():
    batch = [[0.0, 0.0, 1.0], [2.0], [1.0, -1.0]]
    assert [a.tolist() for a in discounted_returns(batch, gamma=1.0)] == [[1, 1, 1], [2], [0, -1]]
    got = discounted_returns(batch, gamma=0.9)
    assert np.allclose(got[0], [0.81, 0.9, 1.0]) and got[1].tolist() == [2.0]
    assert np.allclose(got[2], [1.0 - 0.9, -1.0])
    assert [a.tolist() for a in discounted_returns(batch, gamma=0)] == [[0, 0, 1], [2], [1, -1]]


@settings(max_examples=300, deadline=None)
@given(episodes, gammas)
def test_matches_a_per_turn_loop(batch, gamma):
    got = discounted_returns(batch, gamma=gamma)
    for g, expected in zip(got, returns_loop(batch, gamma)):
        assert np.allclose(g, expected, rtol=1e-12, atol=1e-9)


def test_long_and_mixed_episodes_match_the_loop():
    rng = np.random.default_rng(0)
    lengths = np.concatenate([rng.integers(1, 60, 300), [1, 1000, 1025, 2, 4097]])
    flat = rng.normal(size=int(lengths.sum()))
    for gamma in (0.0, 0.3, 0.9, 0.999, 1.0):
        expected = np.concatenate(returns_loop(np.split(flat, np.cumsum(lengths)[:-1]), gamma))
        assert np.allclose(discounted_returns_flat(flat, lengths, gamma=gamma), expected, rtol=1e-10, atol=1e-9)


@settings(max_examples=300, deadline=None)
@given(episodes, gammas, st.integers(1, 70))
def test_blocks_of_any_size_give_the_same_returns(batch, gamma, chunk):
    lengths = np.array([len(e) for e in batch])
    flat = np.concatenate([np.array(e, dtype=float) for e in batch])
    expected = np.concatenate(returns_loop(batch, gamma))
    assert np.allclose(scan_returns(flat, lengths, gamma, chunk=chunk), expected, rtol=1e-12, atol=1e-9)


def test_episodes_longer_than_a_block():
    rng = np.random.default_rng(3)
    lengths = np.array([5, 70_000, 3, 1, 40_000, 2])
    flat = rng.normal(size=int(lengths.sum()))
    for gamma in (0.5, 0.99, 1.0):
        expected = np.concatenate(returns_loop(np.split(flat, np.cumsum(lengths)[:-1]), gamma))
        assert np.allclose(discounted_returns_flat(flat, lengths, gamma=gamma), expected, rtol=1e-9, atol=1e-8)


def test_returns_of_many_turns_stay_accurate():
    # 1 + 1 + ... over 2**20 turns at gamma 1: exact, where a sloppy scan would drift
    out = discounted_returns_flat(np.ones(2**20), [2**20], gamma=1.0)
    assert out[0] == 2**20 and out[-1] == 1 and (np.diff(out) == -1).all()


def test_huge_rewards_that_overflow_are_an_error():
    with pytest.raises(EstimatorInputError, match="overflow"):
        discounted_returns([[1e308, 1e308]], gamma=1.0)

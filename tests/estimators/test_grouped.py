import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gem_core.estimators import EPS, EstimatorInputError, drgrpo, grpo, grpo_flat, rloo
from tests.estimators.loops import group_loop

ESTIMATORS = {"grpo": grpo, "drgrpo": drgrpo, "rloo": rloo}


def test_grpo_hand_computed():
    # group "a": returns 1 and 0 (mean 0.5, std 0.5); group "b": 3, 1, 2 (mean 2, std sqrt(2/3))
    batch = [[0.0, 1.0], [0.0], [3.0], [1.0], [2.0, 0.0]]
    got = grpo(batch, gamma=1.0, group_ids=["a", "a", "b", "b", "b"])
    s = np.sqrt(2 / 3)
    assert [a.tolist() for a in got[:2]] == [[0.5 / (0.5 + EPS)] * 2, [-0.5 / (0.5 + EPS)]]
    assert np.allclose(np.concatenate(got[2:]), [1 / (s + EPS), -1 / (s + EPS), 0.0, 0.0])


def test_grpo_uses_the_discounted_trajectory_return():
    # gamma 0.9: returns from the first turn 0.9 and 1.0
    got = grpo([[0.0, 1.0], [1.0]], gamma=0.9, group_ids=[7, 7])
    assert np.allclose(got[0], [-0.05 / (0.05 + EPS)] * 2) and np.allclose(got[1], [0.05 / (0.05 + EPS)])
    got = grpo([[0.0, 1.0], [1.0]], gamma=0.0, group_ids=[7, 7])  # returns 0 and 1
    assert np.allclose(got[0], [-0.5 / (0.5 + EPS)] * 2)


def test_drgrpo_and_rloo_hand_computed():
    batch, ids = [[1.0], [0.0], [0.0, 0.5]], [0, 0, 0]  # returns 1, 0, 0.5, mean 0.5
    assert np.allclose(np.concatenate(drgrpo(batch, gamma=1, group_ids=ids)), [0.5, -0.5, 0.0, 0.0])
    # leave one out: 1 - 0.25, 0 - 0.75, 0.5 - 0.5
    assert np.allclose(np.concatenate(rloo(batch, gamma=1, group_ids=ids)), [0.75, -0.75, 0.0, 0.0])


@pytest.mark.parametrize("name", ESTIMATORS)
def test_equal_returns_in_a_group_give_exact_zeros(name):
    got = ESTIMATORS[name]([[0.1, 0.2], [0.3], [0.1], [0.7]], gamma=1.0, group_ids=["x", "x", "y", "y"])
    assert (np.concatenate(got[:2]) == 0).all() and not (np.concatenate(got[2:]) == 0).any()


group_batches = st.lists(
    st.tuples(st.integers(0, 3), st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=6)),
    min_size=2, max_size=16,
)


@settings(max_examples=200, deadline=None)
@given(group_batches, st.sampled_from([0.0, 0.9, 1.0]), st.sampled_from(sorted(ESTIMATORS)))
def test_group_estimators_match_a_loop(items, gamma, name):
    ids = [g for g, _ in items]
    for g in set(ids):  # make every group have at least two episodes
        if ids.count(g) == 1:
            items.append((g, [0.0]))
            ids.append(g)
    batch = [e for _, e in items]
    got = ESTIMATORS[name](batch, gamma=gamma, group_ids=ids)
    expected = group_loop(batch, gamma, ids, name)
    for a, e, episode in zip(got, expected, batch):
        assert np.isfinite(a).all() and len(a) == len(episode)
        assert (a == a[0]).all()  # one advantage for every turn of an episode
        assert np.allclose(a, e, rtol=1e-7, atol=1e-6)


def test_group_ids_of_any_hashable_kind():
    batch = [[1.0], [0.0], [2.0], [0.0]]
    by_str = grpo(batch, gamma=1, group_ids=np.array(["u1", "u2", "u1", "u2"], dtype=object))
    by_tuple = grpo(batch, gamma=1, group_ids=[("e", 1), ("e", 2), ("e", 1), ("e", 2)])
    by_int = grpo(batch, gamma=1, group_ids=np.array([5, 9, 5, 9]))
    assert np.allclose(np.concatenate(by_str), np.concatenate(by_tuple))
    assert np.allclose(np.concatenate(by_str), np.concatenate(by_int))
    torch = pytest.importorskip("torch")
    by_tensor = grpo(batch, gamma=1, group_ids=torch.tensor([5, 9, 5, 9]))
    assert np.allclose(np.concatenate(by_tensor), np.concatenate(by_int))
    mixed = grpo([[1.0], [0.0], [2.0], [3.0]], gamma=1, group_ids=[1, 1, "1", "1"])  # 1 and "1" differ
    assert np.allclose(np.concatenate(mixed), [1, -1, -1, 1], atol=1e-5)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_missing_group_ids_is_an_error(name):
    with pytest.raises(EstimatorInputError, match=f"{name} needs group_ids"):
        ESTIMATORS[name]([[1.0], [0.0]], gamma=1.0)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_group_of_one_is_an_error(name):
    with pytest.raises(EstimatorInputError, match="group 'b' has only episode 2"):
        ESTIMATORS[name]([[1.0], [0.0], [1.0]], gamma=1.0, group_ids=["a", "a", "b"])


def test_group_ids_of_the_wrong_length_or_kind():
    with pytest.raises(EstimatorInputError, match="3 entries for 2 episodes"):
        grpo([[1.0], [0.0]], gamma=1.0, group_ids=[1, 1, 2])
    with pytest.raises(EstimatorInputError, match="hashable"):
        grpo([[1.0], [0.0]], gamma=1.0, group_ids=[[1], [1]])
    with pytest.raises(EstimatorInputError, match="one id per episode"):
        grpo([[1.0], [0.0]], gamma=1.0, group_ids="ab")
    with pytest.raises(EstimatorInputError, match="group_ids"):
        grpo_flat([1.0, 0.0], [1, 1], gamma=1.0, group_ids=None)

"""Failed episodes leave every estimator's statistics: ``valid`` gives each estimator exactly what
it gives on the valid episodes alone, with advantage 0 on the failed ones' turns."""

import numpy as np
import pytest

from gem_core import get_estimator
from gem_core.estimators import EstimatorInputError, estimate, estimate_flat
from gem_core.estimators.validity import kept_episodes

NAN = float("nan")
# episodes 2 and 5 failed: one with a NaN reward (what a broken environment returned), one without turns
REWARDS = [[0.0, 1.0], [0.25], [NAN], [0.0, 0.0, 2.0], [0.5], [], [1.0, -1.0], [0.25]]
VALID = [True, True, False, True, True, False, True, True]
GROUPS = [0, 0, 1, 1, 2, 2, 3, 3]  # groups 1 and 2 lose a member each: nothing left to compare
PER_TURN = ("rebn", "reinforce", "reinforce_baseline")
GROUPED = ("grpo", "drgrpo", "rloo")


def alone(rewards, keep):
    return [r for r, k in zip(rewards, keep) if k]


@pytest.mark.parametrize("name", PER_TURN)
def test_a_per_turn_estimator_over_valid_episodes_equals_it_over_them_alone(name):
    estimator = get_estimator(name)
    got = estimator(REWARDS, gamma=0.9, valid=VALID)
    expected = iter(estimator(alone(REWARDS, VALID), gamma=0.9))
    for rewards, ok, advantages in zip(REWARDS, VALID, got):
        assert advantages.shape == (len(rewards),)
        np.testing.assert_array_equal(advantages, next(expected) if ok else np.zeros(len(rewards)))


@pytest.mark.parametrize("name", GROUPED)
def test_a_group_keeps_its_valid_members_and_one_left_alone_gets_no_gradient(name):
    estimator = get_estimator(name)
    got = estimator(REWARDS, gamma=1.0, group_ids=GROUPS, valid=VALID)
    keep = [True, True, False, False, False, False, True, True]  # groups 0 and 3 whole, 1 and 2 left alone
    assert kept_episodes(VALID, len(REWARDS), GROUPS, 2).tolist() == keep
    expected = iter(estimator(alone(REWARDS, keep), gamma=1.0, group_ids=alone(GROUPS, keep)))
    for rewards, k, advantages in zip(REWARDS, keep, got):
        np.testing.assert_array_equal(advantages, next(expected) if k else np.zeros(len(rewards)))
    assert np.abs(np.concatenate(got[:2])).sum() > 0  # a whole group still learns


@pytest.mark.parametrize("name", PER_TURN + GROUPED)
def test_the_flat_form_and_any_function_agree_with_the_nested_form(name):
    nested = np.concatenate(get_estimator(name)(REWARDS, gamma=0.9, group_ids=GROUPS, valid=VALID))
    lengths = np.array([len(r) for r in REWARDS])
    flat = estimate_flat(name, np.concatenate([np.asarray(r, dtype=float) for r in REWARDS]), lengths,
                         gamma=0.9, group_ids=GROUPS, valid=VALID)
    np.testing.assert_array_equal(flat, nested)
    np.testing.assert_array_equal(np.concatenate(estimate(name, REWARDS, gamma=0.9, group_ids=GROUPS,
                                                          valid=VALID)), nested)


def test_an_estimator_that_knows_nothing_of_failures_gets_them_left_out():
    seen = []

    def mine(rewards, *, gamma, group_ids=None):
        seen.append([list(r) for r in rewards])
        return [np.full(len(r), 7.0) for r in rewards]

    got = estimate(mine, REWARDS, gamma=1.0, valid=VALID)
    assert seen == [[list(r) for r in alone(REWARDS, VALID)]]
    assert [a.tolist() for a in got] == [[7.0] * len(r) if ok else [0.0] * len(r) for r, ok in zip(REWARDS, VALID)]
    flat = estimate_flat(mine, np.array([1.0, NAN, 2.0]), np.array([1, 1, 1]), gamma=1.0, valid=[1, 0, 1])
    assert flat.tolist() == [7.0, 0.0, 7.0]


def test_a_batch_whose_episodes_all_failed_gives_zeros_and_without_valid_nan_still_raises():
    assert [a.tolist() for a in get_estimator("rebn")([[NAN], []], gamma=1.0, valid=[False, False])] == [[0.0], []]
    with pytest.raises(EstimatorInputError, match="turn 0 is nan"):
        get_estimator("rebn")([[1.0], [NAN]], gamma=1.0)


@pytest.mark.parametrize("valid, message", [
    ([True], "1 entries for 2 episodes"),
    ("yes", "one flag per episode"),
    ([1, 2], "only True and False"),
    ([[True], [False]], "2 entries for 2 episodes|one flag per episode"),
])
def test_bad_valid_flags_name_the_fix(valid, message):
    with pytest.raises(EstimatorInputError, match=message):
        get_estimator("rebn")([[1.0], [0.0]], gamma=1.0, valid=valid)


def test_a_group_too_small_from_the_start_is_still_refused():
    with pytest.raises(EstimatorInputError, match="at least two episodes per group"):
        get_estimator("grpo")([[1.0], [0.0], [1.0]], gamma=1.0, group_ids=[0, 0, 1], valid=[True, True, True])

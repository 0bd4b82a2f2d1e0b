"""Every kind of bad input gets an EstimatorInputError (a GemError) that says what to fix."""

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import gem_core
from gem_core import GemError
from gem_core.estimators import EstimatorInputError, estimate_flat, rebn, rebn_flat, reinforce

NAMES = ["rebn", "reinforce", "reinforce_baseline", "grpo", "drgrpo", "rloo"]


def call(name, rewards, **kwargs):
    return gem_core.get_estimator(name)(rewards, gamma=kwargs.pop("gamma", 0.9), group_ids=[0] * len(rewards), **kwargs)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_rewards_name_the_episode_and_turn(name, bad):
    with pytest.raises(EstimatorInputError, match=rf"episode 1, turn 2 is {bad}"):
        call(name, [[0.0, 1.0], [0.0, 1.0, bad, 2.0]])
    with pytest.raises(EstimatorInputError, match="episode 1, turn 2"):
        call(name, [np.array([0.0, 1.0]), np.array([0.0, 1.0, bad])])
    with pytest.raises(EstimatorInputError, match="episode 1, turn 0"):
        call(name, np.array([[0.0, 1.0], [bad, 1.0]]))
    lengths = np.array([2, 4])
    with pytest.raises(EstimatorInputError, match="episode 1, turn 2"):
        estimate_flat(name, np.array([0.0, 1.0, 0.0, 1.0, bad, 2.0]), lengths, gamma=0.9, group_ids=[0, 0])


@pytest.mark.parametrize("name", NAMES)
def test_an_empty_batch_is_an_error(name):
    for empty in ([], (), np.zeros((0, 3)), iter([])):
        with pytest.raises(EstimatorInputError, match="batch is empty"):
            gem_core.get_estimator(name)(empty, gamma=1.0, group_ids=[])
    with pytest.raises(EstimatorInputError, match="batch is empty"):
        estimate_flat(name, np.zeros(0), np.zeros(0, int), gamma=1.0, group_ids=[])


def test_an_episode_without_turns_is_an_error():
    with pytest.raises(EstimatorInputError, match="Episode 1 has no turns"):
        rebn([[1.0], [], [2.0]], gamma=1.0)
    with pytest.raises(EstimatorInputError, match="Episode 0 has no turns"):
        rebn(np.zeros((2, 0)), gamma=1.0)
    with pytest.raises(EstimatorInputError, match=r"episode_lengths\[1\] is 0"):
        rebn_flat([1.0, 2.0], [2, 0], gamma=1.0)


@pytest.mark.parametrize("rewards, message", [
    ([1.0, 0.0], "Episode 0 is float 1.0, expected a sequence of per-turn rewards .one reward per episode"),
    ([[1.0], "10"], "Episode 1 is str '10'"),
    ([[1.0], {0: 1.0}], "Episode 1 is dict"),
    ([[1.0], b"\x01"], "Episode 1 is bytes"),
    ([[1.0, "2.0"]], "episode 0, turn 1 is str '2.0', expected a number"),
    ([[1.0], [None]], "episode 1, turn 0 is NoneType None"),
    ([[1.0, [2.0]]], "episode 0, turn 1 is list"),
    ([[1.0, 2j]], "episode 0, turn 1 is complex"),
    ([[1.0, np.array([2.0])]], "episode 0, turn 1 is ndarray"),
    ([[1.0], [10**400]], "episode 1, turn 0 is int"),
    ([np.zeros((2, 2))], "Episode 0 is ndarray"),
    (5, "rewards must be a sequence of episodes"),
    ("1.0", "rewards must be a sequence of episodes"),
    ({"a": [1.0]}, "rewards must be a sequence of episodes"),
    (np.array([1.0, 2.0]), r"must be 2-D .* pass rewards\[:, None\]"),
    (np.array([["a"]]), "must be 2-D .episodes x turns. and numeric"),
])
def test_malformed_rewards(rewards, message):
    with pytest.raises(EstimatorInputError, match=message):
        rebn(rewards, gamma=1.0)


@pytest.mark.parametrize("gamma", [-0.1, 1.5, float("nan"), "0.9", None, True])
def test_gamma_outside_0_1_is_an_error(gamma):
    with pytest.raises(EstimatorInputError, match="gamma must be a number in"):
        rebn([[1.0], [0.0]], gamma=gamma)
    with pytest.raises(EstimatorInputError, match="gamma must be a number in"):
        estimate_flat("grpo", [1.0, 0.0], [1, 1], gamma=gamma, group_ids=[1, 1])


def test_malformed_flat_arrays():
    with pytest.raises(EstimatorInputError, match="add up to 3 turns but turn_rewards holds 2"):
        rebn_flat([1.0, 2.0], [1, 2], gamma=1.0)
    with pytest.raises(EstimatorInputError, match="episode_lengths must be integers"):
        rebn_flat([1.0, 2.0], [1.0, 1.0], gamma=1.0)
    with pytest.raises(EstimatorInputError, match="turn_rewards must be a 1-D array"):
        rebn_flat([[1.0, 2.0]], [2], gamma=1.0)
    with pytest.raises(EstimatorInputError, match="turn_rewards must hold numbers"):
        rebn_flat(["a", "b"], [2], gamma=1.0)
    with pytest.raises(EstimatorInputError, match=r"episode_lengths\[0\] is -1"):
        rebn_flat([1.0, 2.0], [-1, 3], gamma=1.0)


def test_unknown_options_and_estimators():
    with pytest.raises(EstimatorInputError, match=r"'reinforce' does not accept 'eps'; its options are: \(none\)"):
        estimate_flat("reinforce", [1.0], [1], gamma=1.0, eps=0.1)
    with pytest.raises(EstimatorInputError, match="options are: eps, all_reduce"):
        estimate_flat("rebn", [1.0], [1], gamma=1.0, epsilon=0.1)
    with pytest.raises(GemError, match="Unknown estimator 'rebm'. Did you mean: rebn"):
        estimate_flat("rebm", [1.0], [1], gamma=1.0)
    with pytest.raises(EstimatorInputError, match="registered name or a function"):
        estimate_flat(3, [1.0], [1], gamma=1.0)


def test_many_kinds_of_numbers_and_sequences_are_accepted():
    expected = reinforce([[1.0, 0.0], [2.0]], gamma=0.5)
    variants = [
        [(1, 0), (2,)],
        [[True, False], [2]],
        [np.array([1, 0]), np.array([2.0], dtype=np.float32)],
        [[np.float32(1), np.int64(0)], [Fraction(2)]],
        [[Decimal(1), 0.0], [2.0]],
        ([1.0, 0.0] if i == 0 else [2.0] for i in range(2)),
        np.array([[1.0, 0.0], [2.0]], dtype=object),
        [range(1, -1, -1), [2.0]],
    ]
    for rewards in variants:
        got = reinforce(rewards, gamma=0.5)
        assert [a.tolist() for a in got] == [a.tolist() for a in expected], rewards


def test_torch_numbers_are_accepted():
    torch = pytest.importorskip("torch")
    got = reinforce([[torch.tensor(1.0), torch.tensor(0)], torch.tensor([2.0])], gamma=0.5)
    assert [a.tolist() for a in got] == [[1.0, 0.0], [2.0]]
    with pytest.raises(EstimatorInputError, match="episode 0, turn 0 is Tensor"):
        reinforce([[torch.tensor([1.0, 2.0])]], gamma=0.5)


def test_errors_are_gem_errors_and_value_errors():
    with pytest.raises(GemError):
        rebn([], gamma=1.0)
    with pytest.raises(ValueError):
        rebn([], gamma=1.0)

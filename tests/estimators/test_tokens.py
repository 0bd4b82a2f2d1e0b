import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gem_core.estimators import (
    EstimatorInputError,
    place_on_tokens,
    rebn,
    token_advantages,
    turn_ids,
    turn_rewards,
)
from tests.estimators.loops import place_loop

torch = pytest.importorskip("torch")

MASK = torch.tensor([
    [1, 1, 0, 0, 1, 1, 1, 0],  # two turns
    [0, 1, 0, 1, 0, 1, 1, 1],  # three turns
    [1, 1, 1, 1, 1, 1, 0, 0],  # one turn
])


def test_turn_ids_number_turns_row_after_row():
    ids, per_row = turn_ids(MASK)
    assert per_row.tolist() == [2, 3, 1]
    assert ids.tolist() == [
        [0, 0, -1, -1, 1, 1, 1, -1],
        [-1, 2, -1, 3, -1, 4, 4, 4],
        [5, 5, 5, 5, 5, 5, -1, -1],
    ]


def test_placement_hand_computed():
    out = place_on_tokens([10.0, 20.0, 30.0, 40.0, 50.0, 60.0], MASK, dtype=torch.float64)
    assert out.tolist() == [
        [10, 10, 0, 0, 20, 20, 20, 0],
        [0, 30, 0, 40, 0, 50, 50, 50],
        [60, 60, 60, 60, 60, 60, 0, 0],
    ]
    assert place_on_tokens(np.arange(6), MASK).dtype == torch.float32


masks = st.integers(1, 6).flatmap(lambda rows: st.integers(0, 24).flatmap(
    lambda cols: st.lists(st.lists(st.booleans(), min_size=cols, max_size=cols), min_size=rows, max_size=rows)))


@settings(max_examples=300, deadline=None)
@given(masks, st.data())
def test_placement_matches_a_per_token_loop(rows, data):
    mask = np.array(rows, dtype=bool).reshape(len(rows), -1)
    ids, per_row = turn_ids(torch.from_numpy(mask))
    total = int(per_row.sum())
    values = np.array(data.draw(st.lists(st.floats(-1e6, 1e6), min_size=total, max_size=total)))
    got = place_on_tokens(values, torch.from_numpy(mask.astype(np.int64)), dtype=torch.float64)
    assert np.array_equal(got.numpy(), place_loop(values, mask))
    # and back: summing per turn recovers the values when each sits on its turn's last token
    token_rewards = np.zeros(mask.shape)
    for turn in range(total):
        rows_, cols_ = np.nonzero(ids.numpy() == turn)
        token_rewards[rows_[-1], cols_[-1]] = values[turn]
    recovered, turns = turn_rewards(torch.from_numpy(token_rewards), torch.from_numpy(mask))
    assert np.array_equal(recovered, values) and turns.tolist() == per_row.tolist()


def test_token_advantages_runs_rebn_per_turn():
    rewards = torch.zeros(MASK.shape, dtype=torch.bfloat16)
    # one reward per turn at the turn's last token
    rewards[0, 1], rewards[0, 6] = 0.0, 1.0
    rewards[1, 1], rewards[1, 3], rewards[1, 7] = 1.0, 0.0, 1.0
    rewards[2, 5] = 1.0
    out = token_advantages("rebn", rewards, MASK, gamma=0.9)
    assert out.dtype == torch.bfloat16 and out.shape == MASK.shape
    expected = np.concatenate(rebn([[0.0, 1.0], [1.0, 0.0, 1.0], [1.0]], gamma=0.9))
    assert torch.allclose(out.float(), place_on_tokens(expected, MASK), atol=1e-2)
    assert (out[MASK == 0] == 0).all()


def test_token_advantages_with_groups_and_options():
    mask = torch.tensor([[1, 1, 0, 1], [1, 0, 0, 0], [1, 1, 1, 1], [0, 1, 1, 0]])
    rewards = torch.tensor([[0, 0.5, 0, 0.5], [1.0, 0, 0, 0], [0, 0, 0, 3.0], [0, 0, 2.0, 0]])
    out = token_advantages("grpo", rewards, mask, gamma=1.0, group_ids=["a", "a", "b", "b"], eps=0.0)
    assert out.tolist() == [[0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1], [0, -1, -1, 0]]
    with pytest.raises(EstimatorInputError, match="grpo needs group_ids"):
        token_advantages("grpo", rewards, mask, gamma=1.0)


def test_token_advantages_with_a_custom_estimator_function():
    def constant_per_turn(rewards, *, gamma, group_ids=None):
        return [np.full(len(episode), float(i)) for i, episode in enumerate(rewards)]

    out = token_advantages(constant_per_turn, torch.zeros(MASK.shape), MASK, gamma=1.0)
    assert out.tolist()[1] == [0, 1, 0, 1, 0, 1, 1, 1]


def test_token_level_bad_input():
    rewards = torch.zeros(MASK.shape)
    with pytest.raises(EstimatorInputError, match="has shape .3, 7. but response_mask .3, 8."):
        token_advantages("rebn", torch.zeros(3, 7), MASK, gamma=1.0)
    stray = rewards.clone()
    stray[1, 2] = 1.0
    with pytest.raises(EstimatorInputError, match="holds 1.0 at row 1, position 2, where response_mask is 0"):
        token_advantages("rebn", stray, MASK, gamma=1.0)
    with pytest.raises(EstimatorInputError, match="only 0 and 1"):
        turn_ids(MASK * 2)
    with pytest.raises(EstimatorInputError, match="must be 2-D"):
        turn_ids(MASK[0])
    nan = rewards.clone()
    nan[1, 3] = float("nan")
    with pytest.raises(EstimatorInputError, match="episode 1, turn 1 is nan"):
        token_advantages("rebn", nan, MASK, gamma=1.0)
    with pytest.raises(EstimatorInputError, match="6 turns, turn_values has shape .5,."):
        place_on_tokens(np.zeros(5), MASK)


def test_rows_flagged_invalid_or_without_a_turn_are_left_out():
    """A failed episode's row (flagged, or written with no model token as training libraries do)
    gets 0 and leaves the statistics: the others get what they get without it; its rewards are
    never read."""
    rewards = torch.tensor([[0.0, 1.0, 0, 0, 0, 0, 0, 0], [0.5, 0, 0, 0, 0, 0, 0, 0], [0.0, 0, 0, 0, 0, 0, 0, 2.0]])
    mask = torch.tensor([[1, 1, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0], [1, 0, 1, 1, 1, 1, 1, 1]])
    alone = token_advantages("rebn", rewards[[0, 2]], mask[[0, 2]], gamma=0.9)
    broken = rewards.clone()
    broken[1, 0] = float("nan")
    flagged = token_advantages("rebn", broken, mask, gamma=0.9, valid=[True, False, True])
    turnless = mask.clone()
    turnless[1] = 0
    empty = rewards.clone()
    empty[1] = 0
    unflagged = token_advantages("rebn", empty, turnless, gamma=0.9)
    for out in (flagged, unflagged):
        torch.testing.assert_close(out[[0, 2]], alone)
        assert not out[1].any()
    grouped = token_advantages("grpo", empty, turnless, gamma=1.0, group_ids=[0, 0, 0])
    torch.testing.assert_close(grouped[[0, 2]], token_advantages("grpo", rewards[[0, 2]], mask[[0, 2]], gamma=1.0,
                                                                 group_ids=[0, 0]))
    with pytest.raises(EstimatorInputError, match="holds 0.5 at row 1, position 0, where response_mask is 0"):
        token_advantages("rebn", rewards, turnless, gamma=0.9)  # a reward outside every turn is still a mistake


def test_equal_rewards_give_zero_advantages_on_tokens():
    rewards = torch.zeros(MASK.shape)
    out = token_advantages("rebn", rewards, MASK, gamma=1.0)
    assert (out == 0).all() and not out.isnan().any()


def test_large_batch_placement_is_exact():
    gen = torch.Generator().manual_seed(0)
    mask = torch.rand(64, 2048, generator=gen) < 0.8
    ids, per_row = turn_ids(mask)
    values = torch.arange(int(per_row.sum()), dtype=torch.float64)
    out = place_on_tokens(values, mask, dtype=torch.float64)
    assert torch.equal(out, torch.where(mask, ids.double(), torch.zeros(())))

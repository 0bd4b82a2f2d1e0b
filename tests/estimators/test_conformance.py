"""The adapters' conformance batch (tests/adapters/conformance.py) holds gem_core's values."""

import numpy as np
import pytest

import gem_core
from tests.adapters import conformance as c


def test_the_literal_returns_and_rebn_are_gem_cores():
    returns = gem_core.get_estimator("reinforce")(list(c.EPISODES), gamma=c.GAMMA)
    np.testing.assert_allclose(c.flat(returns), c.flat(c.RETURNS), atol=1e-12)
    rebn = gem_core.get_estimator("rebn")(list(c.EPISODES), gamma=c.GAMMA)
    np.testing.assert_allclose(c.flat(rebn), c.flat(c.REBN), atol=1e-9)
    grpo = gem_core.get_estimator("grpo")(list(c.GROUPED), gamma=c.GAMMA, group_ids=list(c.GROUP_IDS))
    np.testing.assert_allclose(c.flat(grpo), c.flat(c.GRPO), atol=1e-9)


def test_token_rows_put_each_reward_on_its_turns_last_model_token():
    torch = pytest.importorskip("torch")
    rewards, mask = c.token_rows()
    for row, (episode, spans) in enumerate(zip(c.EPISODES, c.turn_spans())):
        model_tokens = {i for start, end in spans for i in range(start, end)}
        assert [i for i, m in enumerate(mask[row].tolist()) if m] == sorted(model_tokens)
        expected = [0.0] * mask.shape[1]
        for reward, (_, end) in zip(episode, spans):
            expected[end - 1] = reward
        assert rewards[row].tolist() == expected
    from gem_core.estimators import token_advantages

    advantages = token_advantages("rebn", rewards, mask, gamma=c.GAMMA)
    c.assert_per_token(advantages)
    with pytest.raises(AssertionError, match="differ"):
        c.assert_per_token(advantages + 0.01 * mask)
    assert torch.equal(c.on_tokens(c.REBN)[mask == 0], torch.zeros(int((mask == 0).sum()), dtype=torch.float64))


def test_the_batch_plus_failed_episodes_gives_gem_cores_values_over_the_valid_ones():
    rebn = gem_core.get_estimator("rebn")(list(c.MIXED), gamma=c.GAMMA, valid=list(c.MIXED_VALID))
    np.testing.assert_allclose(c.flat(rebn), c.flat(c.MIXED_REBN), atol=1e-9)
    counted = gem_core.get_estimator("rebn")(list(c.MIXED), gamma=c.GAMMA)  # had they counted
    assert np.abs(c.flat(counted) - c.flat(c.MIXED_REBN)).max() > 0.1
    grpo = gem_core.get_estimator("grpo")(list(c.GROUPED_MIXED), gamma=c.GAMMA, group_ids=list(c.GROUPED_MIXED_IDS),
                                          valid=list(c.GROUPED_MIXED_VALID))
    np.testing.assert_allclose(c.flat(grpo), c.flat(c.GROUPED_MIXED_GRPO), atol=1e-9)

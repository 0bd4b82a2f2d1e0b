"""Episode tracking, and wrapper chains given by name."""

import pytest

import gem_core
from gem_core import GemError
from gem_core.registry import WRAPPERS
from gem_core.wrappers import EpisodeTrackingWrapper, HistoryWrapper, parse_wrappers, wrap, wrapper_option_names
from tests.wrappers.test_observation import STEPS, Script


def test_episode_tracking_counts_turns_and_reward_per_episode():
    env = EpisodeTrackingWrapper(Script(steps=STEPS))
    _, info = env.reset()
    assert info == {"suffix": "Go.", "prev_ep_step_counter": 0, "prev_ep_cumulative_rewards": 0.0,
                    "step_counter": 0, "cumulative_rewards": 0.0}
    infos = [env.step("a")[4] for _ in range(3)]  # rewards 1, 2, 3
    assert [(i["step_counter"], i["cumulative_rewards"]) for i in infos] == [(1, 1.0), (2, 3.0), (3, 6.0)]
    _, info = env.reset()
    assert (info["prev_ep_step_counter"], info["prev_ep_cumulative_rewards"]) == (3, 6.0)
    assert (info["step_counter"], info["cumulative_rewards"]) == (0, 0.0)
    assert env.step("a")[4]["cumulative_rewards"] == 1.0


def test_core_wrappers_are_registered_by_name():
    names = {"concat", "concat_with_action", "concat_chat", "concat_chat_on_reset", "episode_tracking"}
    assert names <= set(WRAPPERS.names())
    assert all(WRAPPERS.component(n).source == "plugin 'core'" for n in names)
    assert gem_core.get_wrapper("episode_tracking") is EpisodeTrackingWrapper


def test_parse_wrappers():
    assert parse_wrappers(None) == parse_wrappers("") == []
    assert parse_wrappers(" concat_chat , episode_tracking,") == [("concat_chat", {}), ("episode_tracking", {})]
    assert parse_wrappers(["concat", ("concat_chat", {"tokenizer": "x"})]) == [
        ("concat", {}), ("concat_chat", {"tokenizer": "x"})]
    for bad in (["concat", ""], [("concat",)], [3], 3):
        with pytest.raises(GemError):
            parse_wrappers(bad)


def test_chains_apply_innermost_first_with_shared_and_own_options():
    env = wrap(Script(steps=STEPS), "concat_with_action,episode_tracking", max_history_length=1)
    assert isinstance(env, EpisodeTrackingWrapper) and isinstance(env.env, HistoryWrapper)
    assert env.env.max_history_length == 1
    env = wrap(Script(steps=STEPS), [("concat", {"max_history_length": 2}), "episode_tracking"])
    assert env.env.format == "concat" and env.env.max_history_length == 2
    assert wrapper_option_names("concat_chat,episode_tracking") == {"tokenizer", "max_history_length"}
    assert wrapper_option_names("episode_tracking") == set()


@pytest.mark.parametrize("wrappers, options, message", [
    ("episode_tracking", {"max_history_length": 2}, "No wrapper in the chain"),
    ([("episode_tracking", {"tokenizer": None})], {}, "does not accept 'tokenizer'"),
    ("concat,conact_with_action", {}, "Did you mean: concat_with_action"),
])
def test_chain_errors(wrappers, options, message):
    with pytest.raises(GemError, match=message):
        wrap(Script(), wrappers, **options)

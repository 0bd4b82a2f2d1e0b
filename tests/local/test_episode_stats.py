"""The per-step statistics the trainer logs and `gem eval` reports."""

from __future__ import annotations

import gem_core
from gem_core.episodes import Episode, Turn
from gem_core.tools.wrapper import python_tool_no_int_reward
from gem_trainer.metrics import episode_stats


def episode(*infos: dict, last_reward: float = 0.0) -> Episode:
    turns = [Turn("obs", "act", 0.0, info=dict(info)) for info in infos]
    turns[-1].reward, turns[-1].terminated = last_reward, True
    return Episode("env", 0, turns)


def test_turns_per_success_counts_won_episodes_only_and_is_none_without_a_win():
    won_in_2 = episode({}, {"success": True}, last_reward=1.0)
    won_in_4 = episode({}, {}, {}, {"success": True}, last_reward=1.0)
    lost_in_10 = episode(*([{}] * 9), {"success": False})
    stats = episode_stats([won_in_2, won_in_4, lost_in_10])
    assert stats["turns_per_success"] == 3.0 and stats["turns_per_episode"] == 16 / 3
    assert episode_stats([lost_in_10])["turns_per_success"] is None


def test_tool_call_rate_is_the_share_of_episodes_with_a_tool_call():
    env = python_tool_no_int_reward(gem_core.make("game:GuessTheNumber-v0-easy"))
    env.reset(seed=0)
    _, _, _, _, tool_info = env.step("<python>print(1)</python>")
    _, _, _, _, move_info = env.step("\\boxed{5}")
    assert tool_info["use_tool"] and not move_info["use_tool"]
    with_tool = episode(tool_info, move_info)
    without = episode(move_info)
    assert episode_stats([with_tool, without, without, without])["tool_call_rate"] == 0.25
    assert episode_stats([without])["tool_call_rate"] == 0.0

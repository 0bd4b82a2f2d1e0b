"""Episode tracking: the turn count and cumulative reward of the running episode, in ``info``."""

from __future__ import annotations

from typing import Any

from gem_core.core import Env, ResetResult, StepResult
from gem_core.core import ResultWrapper


class EpisodeTrackingWrapper(ResultWrapper):
    """Adds episode statistics to ``info`` (key names as in gem-llm, so its configs carry over).

    After every ``step``: ``step_counter`` (turns taken this episode) and ``cumulative_rewards``
    (their summed reward). After ``reset``: both set to 0, plus ``prev_ep_step_counter`` and
    ``prev_ep_cumulative_rewards`` for the episode that came before (0 for the first).
    """

    def __init__(self, env: Env):
        super().__init__(env)
        self.step_counter = 0
        self.cumulative_rewards = 0.0

    def on_reset(self, observation: str, info: dict[str, Any]) -> ResetResult:
        info["prev_ep_step_counter"] = self.step_counter
        info["prev_ep_cumulative_rewards"] = self.cumulative_rewards
        self.step_counter, self.cumulative_rewards = 0, 0.0
        info["step_counter"] = 0
        info["cumulative_rewards"] = 0.0
        return observation, info

    def on_step(self, action: str, result: StepResult) -> StepResult:
        observation, reward, terminated, truncated, info = result
        self.step_counter += 1
        self.cumulative_rewards += float(reward)
        info["step_counter"] = self.step_counter
        info["cumulative_rewards"] = self.cumulative_rewards
        return result

"""mini-swe-agent in its text mode (LitellmTextbasedModel through litellm's ``hosted_vllm``
provider, its DefaultAgent and its own prompts) plays GuessTheNumber through the gateway: each
command it writes is the environment's action, the environment's answer its observation, and the
game's end its submission. Its episodes are won, rewarded and one token chain each."""

from __future__ import annotations

import os

import pytest

from gem_core.sampled import segments
from tests.harnesses.conftest import GAME, binary_search
from tests.tito import gateway as path

# offline: litellm's cost map from its wheel, no start-up banner
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
minisweagent = pytest.importorskip("minisweagent")


def mini_swe_player(task) -> None:
    """mini-swe-agent's DefaultAgent, text-based model, with a GEM environment in place of a shell."""
    from pathlib import Path

    import yaml
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.exceptions import Submitted
    from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

    class GemEnvironment:
        """mini-swe-agent's environment protocol over the episode: a command is an action."""

        def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict:
            result = task.step(action.get("command", ""))
            if result.done:
                raise Submitted({"role": "exit", "content": result.observation,
                                 "extra": {"exit_status": "Submitted", "submission": result.observation}})
            return {"output": result.observation, "returncode": 0, "exception_info": ""}

        def get_template_vars(self, **kwargs) -> dict:
            return {"system": "GEM", "release": "", "version": "", "machine": "", **kwargs}

        def serialize(self) -> dict:
            return {}

    config = yaml.safe_load((Path(minisweagent.__file__).parent / "config" / "mini_textbased.yaml").read_text())
    model = LitellmTextbasedModel(model_name=f"hosted_vllm/{task.model}", cost_tracking="ignore_errors",
                                  model_kwargs={"api_base": task.base_url, "api_key": task.api_key})
    DefaultAgent(model, GemEnvironment(), **{**config["agent"], "step_limit": 8}).run(task.observation)


def test_mini_swe_agent_plays_a_gem_environment_through_the_gateway(smollm2_tokenizer):
    episodes = path.play(smollm2_tokenizer, binary_search(smollm2_tokenizer, tool=False), GAME, (3, 7, 10),
                         agent=mini_swe_player)
    for episode in episodes:
        assert episode.outcome == "completed", episode.failure
        assert episode.total_reward == 1.0 and episode.turns[-1].reward == 1.0
        assert all(turn.info["steps"] for turn in episode.turns)  # every answer was a command, stepped
        first = episode.turns[0].observation
        assert "mswea_bash_command" in first and "Guess The Number" in first  # its own prompts, our task
        assert len(segments(episode.turns)) == 1, [t.info["sampled"]["reason"] for t in episode.turns]

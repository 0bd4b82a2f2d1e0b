"""The OpenAI Agents SDK (chat-completions mode, tracing off) plays GuessTheNumber with the
``step`` tool of ``gem serve``'s MCP endpoint, through the gateway: every episode is won and
rewarded, its turns carry the sampled ids in one chain; and ``gem train`` trains 2 steps on such
episodes (the weights change, the loss reads only sampled ids)."""

from __future__ import annotations

import pytest

from gem_core.sampled import segments
from tests.harnesses.conftest import GAME, binary_search
from tests.local.conftest import tiny_model_dir, tokenizer_dir  # noqa: F401 - fixtures
from tests.tito import gateway as path

SEEDS = (3, 7, 10)


async def agents_sdk_player(task) -> None:
    """An Agents SDK agent with the environment's MCP tools, on the gateway's chat completions."""
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStreamableHttp
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
    async with MCPServerStreamableHttp(params={"url": task.mcp_url}, cache_tools_list=True) as server:
        agent = Agent(name="player", instructions="Find the number: guess with the step tool.", mcp_servers=[server],
                      model=OpenAIChatCompletionsModel(model=task.model, openai_client=client))
        await Runner.run(agent, task.observation, max_turns=10)


def test_the_agents_sdk_plays_a_gem_environment_to_its_reward_through_the_gateway(qwen3_tokenizer):
    episodes = path.play(qwen3_tokenizer, binary_search(qwen3_tokenizer), GAME, SEEDS, agent=agents_sdk_player)
    for episode in episodes:
        assert episode.outcome == "completed", episode.failure
        assert episode.total_reward == 1.0
        guesses = [t for t in episode.turns if t.info["steps"]]
        assert [t.reward for t in guesses][-1] == 1.0 and episode.turns[-1].action == "I found the number."
        assert len(episode.turns) == len(guesses) + 1  # each guess, then the final answer
        assert len(segments(episode.turns)) == 1, [t.info["sampled"]["reason"] for t in episode.turns]


def test_gem_train_trains_two_steps_on_agents_sdk_episodes(tiny_model_dir, tmp_path):
    pytest.importorskip("peft")
    from safetensors.torch import load_file

    from gem_core.episodes import load_episodes
    from gem_serve.gateway.backends import VLLMBackend
    from gem_trainer.config import build_config
    from gem_trainer.models import load_tokenizer
    from gem_trainer.training.agents import training_samples
    from gem_trainer.training.trainer import Trainer
    from tests.gateway.scripted import ScriptedBackend
    from tests.gateway.templates import QWEN3_STYLE

    template = tmp_path / "qwen3_style.jinja"
    template.write_text(QWEN3_STYLE)
    tokenizer = load_tokenizer(tiny_model_dir, chat_template=template)
    backend = ScriptedBackend(binary_search(tokenizer))
    with backend.serving():
        config = build_config({"envs": [GAME], "model": str(tiny_model_dir), "chat_template": str(template),
                               "agent": "tests.harnesses.test_agents_sdk:agents_sdk_player", "steps": 2,
                               "episodes_per_step": 4, "max_new_tokens": 64, "output_dir": str(tmp_path / "run")})
        trainer = Trainer(config, progress=False)
        trainer.agent_options = {"backend": VLLMBackend(backend.url, "scripted")}  # the model that calls tools on cue
        result = trainer.run()
    assert all(r["failed_rate"] == 0 and r["success_rate"] == 1 and r["grad_norm"] > 0 for r in result.records)
    lora_b = [t for name, t in load_file(result.checkpoint / "model" / "adapter_model.safetensors").items()
              if "lora_B" in name]
    assert any(float(t.abs().max()) > 0 for t in lora_b)  # LoRA's B starts at 0: the weights changed
    episodes = load_episodes(result.output_dir / "episodes" / "step-00002.jsonl")
    samples, trained, skipped = training_samples(episodes, [e.rewards for e in episodes])
    assert (trained, skipped) == (sum(e.num_turns for e in episodes), 0)
    sampled = {tuple(token for turn in e.turns for token in turn.info["sampled"]["response_ids"]) for e in episodes}
    assert {tuple(t for t, bit in zip(s.completion_ids, s.mask) if bit) for s in samples} == sampled
    assert all(len(s.completion_ids) == len(s.mask) == len(s.advantages) for s in samples)

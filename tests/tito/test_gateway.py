"""The token-faithfulness suite on the gateway's path (see tests/tito/checks.py and
tests/tito/gateway.py), for SmolLM2's template and one that drops earlier answers' reasoning:
a harness's episodes train exactly the ids the backend sampled, each in the context it was sampled
in, whatever ids it sampled (non-canonical, cut before the end-of-turn token, other stop tokens,
special tokens inside, reasoning blocks); and ``gem train --agent`` trains SmolLM2 on episodes of
an agent program, end to end."""

from __future__ import annotations

import pytest

from gem_core.sampled import segments
from tests.tito import checks
from tests.tito import gateway as path
from tests.tito.fixtures import SEEDS, echo_env  # noqa: F401 - fixtures
from tests.tito.script import Script
from tests.tito.templates import DROPS_REASONING, SMOLLM2, full_render, with_template

pytest.importorskip("starlette")
pytest.importorskip("openai")
from tests.gateway.conftest import smollm2_tokenizer  # noqa: E402,F401 - fixture


@pytest.mark.parametrize("template", [SMOLLM2, DROPS_REASONING], ids=lambda t: t.name)
def test_the_gateway_trains_the_sampled_ids_in_their_context(smollm2_tokenizer, echo_env, template):
    tokenizer = with_template(smollm2_tokenizer, template)
    script = Script(tokenizer, template.end_of_turn, template.other_stop, template.mid_special)
    episodes = path.play(tokenizer, script, echo_env, SEEDS)
    assert [e.outcome for e in episodes] == ["completed"] * len(SEEDS)
    assert all(len(segments(e.turns)) == 1 for e in episodes)  # the harness kept its history: one chain each
    # a chain continues from the sampled ids, so prompts are full renders only up to the first answer whose ids
    # are not its text's tokens, and never past a dropped reasoning block
    render = None if template.rewrites else full_render(tokenizer)
    checks.assert_faithful(path.trained(episodes), script, render=render)


def test_gem_train_trains_smollm2_on_an_agent_programs_episodes(smollm2_dir, echo_env, tmp_path, monkeypatch):
    """2 steps of ``gem train --agent`` with the built-in model sampling through the gateway: the
    weights change, and the loss reads exactly the ids the model sampled."""
    pytest.importorskip("peft")
    from safetensors.torch import load_file

    from gem_core.episodes import load_episodes
    from gem_trainer.config import build_config
    from gem_trainer.training.agents import training_samples
    from gem_trainer.training.trainer import Trainer

    monkeypatch.setenv("GEM_TEST_TURNS", "2")  # the program stops after two answers: episodes are cut
    config = build_config({"envs": [echo_env], "model": str(smollm2_dir), "agent": "tests.tito.gateway:text_agent",
                           "steps": 2, "episodes_per_step": 2, "max_new_tokens": 8, "threads": 2,
                           "output_dir": str(tmp_path / "run")})
    result = Trainer(config, progress=False).run()
    assert [r["turns_trained"] for r in result.records] == [4, 4] and all(r["failed_rate"] == 0 for r in result.records)
    assert all(r["loss"] != 0 and r["grad_norm"] > 0 for r in result.records)
    lora_b = [tensor for name, tensor in load_file(result.checkpoint / "model" / "adapter_model.safetensors").items()
              if "lora_B" in name]
    assert lora_b and any(float(t.abs().max()) > 0 for t in lora_b)  # LoRA's B starts at 0: the weights changed
    for step in (1, 2):
        episodes = load_episodes(result.output_dir / "episodes" / f"step-{step:05d}.jsonl")
        assert [e.outcome for e in episodes] == ["cut"] * 2 and all(e.num_turns == 2 for e in episodes)
        samples, trained, _ = training_samples(episodes, [e.rewards for e in episodes])
        assert trained == 4
        for sample, episode in zip(samples, episodes):
            sampled = [token for turn in episode.turns for token in turn.info["sampled"]["response_ids"]]
            assert [t for t, bit in zip(sample.completion_ids, sample.mask) if bit] == sampled
            prompt = episode.turns[0].info["sampled"]["prompt_ids"]
            assert sample.prompt_ids == prompt  # the program's first prompt, as the gateway rendered it

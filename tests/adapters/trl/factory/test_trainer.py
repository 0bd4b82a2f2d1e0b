"""End to end: TRL's stock GRPOTrainer (no subclass) with GEM's environment_factory, on the CPU.

TRL runs its own multi-turn tool loop: it renders the tools into the prompt with the chat
template, parses the model's ``<tool_call>`` blocks, calls GEM's environment objects and feeds
their answers back. What the model writes is the one part scripted here: SmolLM2-135M-Instruct does
not write tool calls untrained, so its ``generate`` is a seeded player that writes them (as
TRL's own tests script tool-calling models); everything else (TRL's loop and parsing, GEM's
environments and sandbox, the log-probabilities, the loss and the optimiser) is real. The player
reads the conversation as TRL renders it, so it also checks what TRL shows the model.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from collections.abc import Callable

import pytest
import torch

import gem_core
from gem_adapters.trl.chat_template import with_tool_calling
from gem_adapters.trl.factory import environment_factory, environment_return
from gem_adapters.trl.versions import has_environment_reward
from tests.adapters import failing
from tests.adapters.trl.conftest import EASY

TOOL_MATH = "math:Products-v0+Tool"


def tool_call(name: str, **arguments) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def responses(conversation: str) -> list[str]:
    """The tool answers so far, as the chat template shows them to the model."""
    return re.findall(r"<tool_response>\n?(.*?)\n?</tool_response>", conversation, re.DOTALL)


def scripted_generate(tokenizer, player: Callable[[str], str] | None = None, *,
                      script: Callable[[list[int]], list[int]] | None = None):
    """In place of the model's ``generate``: each prompt's continuation is ``player(prompt text)``,
    closed with ``<|im_end|>`` (or the token ids ``script(prompt ids)``) and right-padded, after the
    prompt, as ``generate`` returns it."""
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")

    def generate(input_ids=None, attention_mask=None, **_settings):
        answers = []
        for ids, mask in zip(input_ids, attention_mask):
            if script is not None:
                answers.append(script(ids[mask.bool()].tolist()))
                continue
            text = tokenizer.decode(ids[mask.bool()], skip_special_tokens=False)
            answers.append(tokenizer.encode(player(text), add_special_tokens=False) + [end])
        width = max(map(len, answers))
        padded = [a + [tokenizer.pad_token_id] * (width - len(a)) for a in answers]
        return torch.cat([input_ids, torch.tensor(padded, dtype=input_ids.dtype)], dim=1)

    return generate


def train(model_dir, env_id, seeds, player, out, *, steps=1, generations=2, script=None, **grpo):
    """Train with TRL's stock GRPOTrainer and GEM's factory; returns the trainer, what each
    batch's reward functions saw (completions, environments' info) and the weights before."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = with_tool_calling(AutoTokenizer.from_pretrained(model_dir))
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    model.generate = scripted_generate(tokenizer, player, script=script)
    batches = []

    def record(completions, environments, **_columns):
        batches.append((completions, [dict(env.info) for env in environments]))
        return [0.0] * len(completions)

    rows = [{"prompt": [{"role": "user", "content": ""}], "env_id": env_id, "seed": seed} for seed in seeds]
    config = {"output_dir": str(out), "use_cpu": True, "bf16": False, "per_device_train_batch_size": 4,
              "num_generations": generations, "max_completion_length": 256, "max_steps": steps,
              "learning_rate": 1e-4, "logging_steps": 1, "report_to": [], "save_strategy": "no", "seed": 0,
              "dataloader_num_workers": 0, "gradient_checkpointing": False, **grpo}
    funcs = [record] if has_environment_reward() else [record, environment_return]
    trainer = GRPOTrainer(model=model, reward_funcs=funcs, args=GRPOConfig(**config),
                          train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                          environment_factory=environment_factory(env_id))
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    trainer.train()
    return trainer, batches, before


def guesser(seed: int):
    """Random guesses; an episode's first call names a wrong argument (TRL answers with the error,
    the episode goes on); it stops writing calls when the game is over or after two guesses."""
    rng = random.Random(seed)

    def play(conversation: str) -> str:
        assert '"name": "act"' in conversation  # TRL shows the model GEM's action tool
        seen = responses(conversation)
        if not seen:
            return tool_call("act", guess=5)
        if len(seen) >= 3 or not ("error" in seen[-1] or "Enter your guess" in seen[-1]):
            return "Done."
        return tool_call("act", action=f"\\boxed{{{rng.randint(1, 10)}}}")

    return play


def played(completion: list[dict]) -> list[tuple[str, str]]:
    """(action, the tool's answer) of each valid act call of one rollout, from TRL's messages."""
    calls = [c["function"]["arguments"] for m in completion if m["role"] == "assistant"
             for c in m.get("tool_calls") or ()]
    answers = [m["content"] for m in completion if m["role"] == "tool"]
    assert len(calls) == len(answers)
    return [(call["action"], answer) for call, answer in zip(calls, answers) if "action" in call]


def test_stock_grpo_trainer_trains_smollm2_on_gem_episodes_through_the_factory(smollm2_dir, tmp_path, capsys):
    start = time.perf_counter()
    trainer, batches, before = train(smollm2_dir, EASY, [0, 1, 2, 3], guesser(0), tmp_path, steps=2)
    seconds = time.perf_counter() - start
    with capsys.disabled():
        print(f"\n[trl factory end to end] 2 optimiser steps of 4 episodes on CPU: {seconds:.0f} s")

    assert trainer.state.global_step == 2 and len(batches) == 2
    reward_key = f"rewards/{'game_GuessTheNumber_v0_easy' if has_environment_reward() else 'environment_return'}/mean"
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logs) == 2
    for entry, (completions, infos) in zip(logs, batches):
        returns = [math.fsum(info["turn_rewards"]) for info in infos]
        assert entry[reward_key] == pytest.approx(sum(returns) / len(returns), abs=1e-5)
        for completion, info in zip(completions, infos):
            assert info["env_id"] == EASY
            errors = [m["content"] for m in completion if m["role"] == "tool" and "error" in m["content"]]
            assert errors and "guess" in errors[0]  # the wrong argument, told to the model
            turns = played(completion)
            assert len(turns) == len(info["turn_rewards"]) >= 1  # the episode went on after it
            env = gem_core.make(EASY)  # the same seed and actions, in-process
            env.reset(seed=info["seed"])
            for action, answer in turns:
                observation, *_ = env.step(action)
                assert observation in answer
    changed = [name for name, p in trainer.model.named_parameters() if not torch.equal(before[name], p.detach())]
    assert changed, "two optimiser steps left every weight unchanged"


def test_the_models_python_call_runs_in_gems_sandbox(tiny_model_dir, tmp_path):
    """math:Products-v0+Tool: the model calls python(code); GEM's tool wrapper runs it in the
    sandbox and its output is the answer; then act(answer) is graded."""

    def solver(conversation: str) -> str:
        assert '"name": "python"' in conversation and '"name": "act"' in conversation
        seen = responses(conversation)
        question = conversation.split("<|im_start|>user\n")[1]
        factors = re.findall(r"-?\d+", question.split("\n")[0])
        if not seen:
            return tool_call("python", code=f"print({' * '.join(factors)})")
        if len(seen) == 1:
            result = re.findall(r"-?\d+", seen[0])[-1]
            return tool_call("act", action=f"\\boxed{{{result}}}")
        return "Done."

    _, batches, _ = train(tiny_model_dir, TOOL_MATH, [0, 1], solver, tmp_path)
    (completions, infos), = batches
    for completion, info in zip(completions, infos):
        python_answer = next(m["content"] for m in completion if m["role"] == "tool")
        assert "Code execution result" in python_answer
        assert info["turn_rewards"] == [0.0, 1.0] and info["stop"] == "terminated"


def test_an_environment_that_raises_ends_its_episode_and_training_goes_on(tiny_model_dir, tmp_path, caplog):
    def player(conversation: str) -> str:
        seen = responses(conversation)
        return "Done." if seen and "over" in seen[-1] else tool_call("act", action="\\boxed{1}")

    with failing.registered() as env_id:
        trainer, batches, _ = train(tiny_model_dir, env_id, [0, 1], player, tmp_path)
    assert trainer.state.global_step == 1
    (completions, infos), = batches
    for completion, info in zip(completions, infos):
        answers = [m["content"] for m in completion if m["role"] == "tool"]
        assert failing.MESSAGE in answers[1] and "over" in answers[2]
        assert info["stop"] == "failed" and info["turn_rewards"] == [failing.FIRST_REWARD, 0.0]
        assert info["failure"]["kind"] == "error"
    assert failing.MESSAGE in caplog.text

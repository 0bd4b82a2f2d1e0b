"""``python bench/trl_paths.py``: the TRL adapter's two paths, step for step on the same batch.

Run it with the ``trl`` test stage's python (``python scripts/adapter_envs.py python trl``). Each
path trains SmolLM2-135M-Instruct (``--model``) on ``game:GuessTheNumber-v0-easy`` on the CPU with
the same batch: ``--starts`` starts x ``--n`` episodes, the same seeds, and the same moves (a
bisection player writes the model's turns, since untrained SmolLM2 writes no tool calls; the
rollout path gets the guess as text, the factory path as an ``act`` tool call). It reports the
wall time of each optimiser step (generation, environment, log-probabilities, loss, update) and
their median over the steps after the first:

* ``rollout``: ``GemGRPOTrainer`` (GEM's rollout, per-turn ReBN), TRL 1.16;
* ``factory``: TRL's stock ``GRPOTrainer`` with GEM's ``environment_factory``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ENV_ID = "game:GuessTheNumber-v0-easy"
FEEDBACK = re.compile(r"you guessed (\d+); the number is (higher|lower)")


def bisection(conversation: str) -> int:
    """The next guess from the feedback so far (1 to 10)."""
    low, high = 1, 10
    for guess, direction in FEEDBACK.findall(conversation):
        low, high = (int(guess) + 1, high) if direction == "higher" else (low, int(guess) - 1)
    return (low + high) // 2


def game_over(conversation: str) -> bool:
    answers = re.findall(r"<tool_response>\n?(.*?)\n?</tool_response>", conversation, re.DOTALL)
    return bool(answers) and "Enter your guess" not in answers[-1]


class StepTimes:
    """A TrainerCallback-shaped recorder of each optimiser step's wall time."""

    def __init__(self):
        self.seconds: list[float] = []
        self._start = 0.0

    def on_step_begin(self, *_args, **_kwargs):
        self._start = time.perf_counter()

    def on_step_end(self, *_args, **_kwargs):
        self.seconds.append(time.perf_counter() - self._start)


def scripted_tokens(tokenizer, text_of):
    """Token ids of each scripted answer, closed with the end of turn."""
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    return lambda conversation: tokenizer.encode(text_of(conversation), add_special_tokens=False) + [end]


def run_path(path: str, model_dir: str, starts: int, n: int, steps: int, out: Path) -> list[float]:
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig

    from gem_adapters.trl.chat_template import with_tool_calling

    config = GRPOConfig(output_dir=str(out / path), use_cpu=True, bf16=False, per_device_train_batch_size=starts * n,
                        num_generations=n, max_completion_length=256 if path == "factory" else 32,
                        max_steps=steps, learning_rate=1e-5, logging_steps=1, report_to=[], save_strategy="no",
                        seed=0, dataloader_num_workers=0, gradient_checkpointing=False)
    seeds = range(starts * steps)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    times = StepTimes()
    callback = type("Times", (TrainerCallback,), {"on_step_begin": times.on_step_begin,
                                                   "on_step_end": times.on_step_end})()
    if path == "rollout":
        from gem_adapters.trl.trainer import GemGRPOTrainer

        rows = [{"prompt": [{"role": "user", "content": "start"}], "env_id": ENV_ID, "seed": s} for s in seeds]
        trainer = GemGRPOTrainer(model=model, args=config, processing_class=tokenizer,
                                 train_dataset=Dataset.from_list(rows), callbacks=[callback])
        answer = scripted_tokens(tokenizer, lambda text: f"\\boxed{{{bisection(text)}}}")
        trainer._generate_single_turn = lambda prompt_ids, *_args, **_kwargs: (
            [answer(tokenizer.decode(ids)) for ids in prompt_ids], None)
    else:
        from trl import GRPOTrainer

        from gem_adapters.trl.factory import environment_factory

        tokenizer = with_tool_calling(tokenizer)
        rows = [{"prompt": [{"role": "user", "content": ""}], "env_id": ENV_ID, "seed": s} for s in seeds]
        trainer = GRPOTrainer(model=model, args=config, processing_class=tokenizer, train_dataset=Dataset.from_list(rows),
                              environment_factory=environment_factory(ENV_ID), callbacks=[callback])
        call = ('<tool_call>\n{{"name": "act", "arguments": {{"action": "\\\\boxed{{{}}}"}}}}\n</tool_call>')
        answer = scripted_tokens(tokenizer, lambda text: "Done." if game_over(text) else call.format(bisection(text)))

        def generate(input_ids=None, attention_mask=None, **_settings):
            answers = [answer(tokenizer.decode(ids[mask.bool()])) for ids, mask in zip(input_ids, attention_mask)]
            width = max(map(len, answers))
            padded = [a + [tokenizer.pad_token_id] * (width - len(a)) for a in answers]
            return torch.cat([input_ids, torch.tensor(padded, dtype=input_ids.dtype)], dim=1)

        model.generate = generate
    trainer.train()
    return times.seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/trl_paths.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2", help="smollm2 (the built-in model) or a local folder")
    parser.add_argument("--starts", type=int, default=2, help="starts per step (default 2)")
    parser.add_argument("--n", type=int, default=4, help="episodes per start (default 4)")
    parser.add_argument("--steps", type=int, default=3, help="optimiser steps per path (default 3)")
    parser.add_argument("--paths", nargs="+", default=["rollout", "factory"], choices=["rollout", "factory"])
    args = parser.parse_args(argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import trl
    from gem_trainer.models import resolve_model

    model_dir = str(resolve_model(args.model))
    results = {"trl": trl.__version__, "episodes_per_step": args.starts * args.n, "paths": {}}
    with tempfile.TemporaryDirectory() as out:
        for path in args.paths:
            seconds = run_path(path, model_dir, args.starts, args.n, args.steps, Path(out))
            later = seconds[1:] or seconds
            results["paths"][path] = {"step_seconds": [round(s, 2) for s in seconds],
                                      "median_after_first": round(statistics.median(later), 2)}
            print(f"{path}: steps {', '.join(f'{s:.1f}' for s in seconds)} s; "
                  f"median after the first {statistics.median(later):.1f} s", file=sys.stderr)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

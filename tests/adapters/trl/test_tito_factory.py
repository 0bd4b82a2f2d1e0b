"""The token-faithfulness checks on TRL's own tool loop with GEM's ``environment_factory`` (TRL's
stock GRPOTrainer, one training step; the model's ``generate`` scripted, as in
factory/test_trainer.py). TRL keeps each generation's ids as sampled and puts the tool results
between them as it renders them; GEM plays the environment. Checked: every run of masked tokens is
one generation's output in the context it was generated in (1, 2), earlier tokens never change (3),
and every action reached the environment as the model wrote it, whatever it ends in (4). (TRL's
loop ends a rollout at an answer without a tool call, so answers cut by the token limit, which the
rollout path's suite covers, are not played here.)"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tests.adapters.trl.conftest import tiny_model_dir  # noqa: F401 - fixture
from tests.adapters.trl.factory.test_trainer import responses, tool_call, train
from tests.tito import checks, echo
from tests.tito.script import ROUND, Call

#: The actions of a rollout's tool calls, then an answer without one; the second call's ids are
#: written a character at a time (non-canonical), the last action is a reasoning block.
ACTIONS = ("I guess 1.", "is 2 <", "is 3 <|", "is 4 ", "is 5\n", "<think>\nround 6\n</think>\n\nI guess 6.")


@dataclass
class ToolScript:
    """Answers each prompt with the next tool call of :data:`ACTIONS` (by how many tool answers
    the prompt holds), then "Done."; records every call as the suite's sampler does."""

    tokenizer: Any
    calls: list[Call] = field(default_factory=list)

    def __call__(self, prompt_ids: list[int]) -> list[int]:
        text = self.tokenizer.decode(prompt_ids, skip_special_tokens=False)
        seed, turn = int(ROUND.findall(text)[0][0]), len(responses(text))
        answer = tool_call("act", action=ACTIONS[turn]) if turn < len(ACTIONS) else "Done."
        encode = lambda t: self.tokenizer.encode(t, add_special_tokens=False)  # noqa: E731
        ids = [i for c in answer for i in encode(c)] if turn == 1 else encode(answer)
        output = ids + [self.tokenizer.convert_tokens_to_ids("<|im_end|>")]
        self.calls.append(Call(seed, turn, "non_canonical" if turn == 1 else "tool_call", tuple(prompt_ids),
                               tuple(output)))
        return output


def test_trls_tool_loop_trains_the_sampled_ids_and_gem_gets_every_action(tiny_model_dir, tmp_path, monkeypatch):
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    generated = []
    native = GRPOTrainer._generate

    def recording(self, prompts):
        result = native(self, prompts)
        generated.append(result[:3])  # prompt_ids, completion_ids, tool_mask
        return result

    monkeypatch.setattr(GRPOTrainer, "_generate", recording)
    script = ToolScript(AutoTokenizer.from_pretrained(tiny_model_dir))
    with echo.registered() as env_id:
        train(tiny_model_dir, env_id, [0, 1], None, tmp_path, script=script, max_completion_length=2048)
    (prompt_ids, completion_ids, tool_mask), = generated
    trained = []
    for prompt, completion, mask in zip(prompt_ids, completion_ids, tool_mask):
        seed = int(ROUND.findall(script.tokenizer.decode(prompt))[0][0])
        trained.append(checks.Trained(seed, list(prompt) + list(completion), [0] * len(prompt) + list(mask)))
    calls = checks.assert_runs_are_sampled(trained, script)
    checks.assert_prefixes_kept(calls, script)
    for sequence, sequence_calls in zip(trained, calls):
        assert [c.turn for c in sequence_calls] == list(range(len(ACTIONS) + 1))  # every generation, in order
        shown = script.tokenizer.decode(sequence.ids, skip_special_tokens=False)
        for turn, action in enumerate(ACTIONS, start=1):
            assert json.dumps(echo.observation(sequence.seed, turn, action))[1:-1] in shown \
                or echo.observation(sequence.seed, turn, action) in shown

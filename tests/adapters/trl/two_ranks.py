"""Run by test_distributed.py under torchrun: `gem_adapters.trl.train` in each process, with an
environment whose episodes last 1 to 3 turns (by seed), printing each process's per-turn rewards
and the per-turn advantages the trainer gave TRL."""

import json
import sys

import gem_core


class Turns(gem_core.Env):
    """Seed s: an episode of s % 3 + 1 turns; turn t earns s + t."""

    def reset(self, seed=None, **options):
        super().reset(seed)
        self.start, self.turn = seed, 0
        return f"Say anything ({seed}).", {}

    def step(self, action):
        self.turn += 1
        return "Again.", float(self.start + self.turn), self.turn >= self.start % 3 + 1, False, {}

    def sample_random_action(self):
        return "anything"


ENV_ID = "test:Turns-v0"
gem_core.register(ENV_ID, Turns)

from gem_adapters.trl import trainer  # noqa: E402
from gem_adapters.trl.train import main  # noqa: E402

scored = trainer.GemGRPOTrainer._generate_and_score_completions


def reporting(self, inputs):
    output = scored(self, inputs)
    advantages = [[float(row[start]) for start, _ in episode["gem_turn_spans"]]
                  for episode, row in zip(inputs, output["advantages"])]
    print("GEM-RESULT " + json.dumps({"rank": self.accelerator.process_index, "advantages": advantages,
                                      "rewards": [episode["gem_turn_rewards"] for episode in inputs]}), flush=True)
    return output


trainer.GemGRPOTrainer._generate_and_score_completions = reporting
if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

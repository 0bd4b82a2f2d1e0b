"""ReverseWord: spell a word backwards, one attempt per turn."""

from gem_core import Env
from gem_core.parsing import last_boxed

WORDS = ("planet", "garden", "rocket", "silver", "window", "forest", "bridge", "candle")


class ReverseWordEnv(Env):
    """Write the given word backwards in \\boxed{}. Reward 1 when right; a wrong attempt costs a
    turn; no \\boxed{} answer ends the episode with -0.1."""

    def __init__(self, max_turns: int = 3):
        self.max_turns = max_turns

    def reset(self, seed=None, **options):
        super().reset(seed)
        self.word = self.rng.choice(WORDS)
        self.turn = 0
        return f"Write the word '{self.word}' backwards, inside \\boxed{{}}.", {}

    def step(self, action):
        self.turn += 1
        answer = last_boxed(action)
        if answer is None:
            return "No answer in \\boxed{}.", -0.1, True, False, {}
        if answer.strip().lower() == self.word[::-1]:
            return "Correct!", 1.0, True, False, {"success": True}
        truncated = self.turn >= self.max_turns
        return "Not quite, try again.", 0.0, False, truncated, {"success": False}

    def sample_random_action(self):
        letters = list(self.word)
        self.rng.shuffle(letters)
        return "\\boxed{" + "".join(letters) + "}"

"""ReverseWord: spell a word backwards, one attempt per turn."""

from gem_core import Env, GemError
from gem_core.parsing import last_boxed

WORDS = ("planet", "garden", "rocket", "silver", "window", "forest", "bridge", "candle")


class ReverseWordEnv(Env):
    """Write the given word backwards in \\boxed{}. Reward 1 when right; a wrong attempt costs a
    turn; no \\boxed{} answer ends the episode with -0.1."""

    def __init__(self, max_turns: int = 3):
        self.max_turns = max_turns
        self.turn = None  # no episode until reset

    def reset(self, seed=None, **options):
        super().reset(seed)
        self.word = self.rng.choice(WORDS)
        self.turn = 0
        return f"Write the word '{self.word}' backwards, inside \\boxed{{}}.", {}

    def step(self, action):
        if self.turn is None:
            raise GemError("Call reset() before step().")
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
        self.action_rng.shuffle(letters)  # not self.rng: sampling must not change the episodes
        return "\\boxed{" + "".join(letters) + "}"

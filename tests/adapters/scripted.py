"""A scripted Guess The Number player shared by the adapter stages."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Guesser:
    """Plays Guess The Number by bisection, reading 'higher'/'lower' from the last observation of
    a ChatML prompt."""

    low: int = 1
    high: int = 10
    last: int | None = None
    answers: list[str] = field(default_factory=list)

    def __call__(self, prompt: str) -> str:
        tail = prompt.rsplit("<|im_start|>user", 1)[-1].lower()
        if self.last is not None:
            if "higher" in tail:
                self.low = self.last + 1
            elif "lower" in tail:
                self.high = self.last - 1
        self.last = (self.low + self.high) // 2
        answer = f"I guess \\boxed{{{self.last}}}."
        self.answers.append(answer)
        return answer

"""An ORS environment of the tests' own, written with ors-sdk's server classes: ``SumTask``, one
addition per task, with a calculator tool (no reward) and an answer tool (reward 1 when right,
0 when wrong; the episode then ends). Served by ors-sdk's own ``ors.Server``."""

from __future__ import annotations

import ors
from pydantic import BaseModel

TASKS = [{"a": a, "b": b} for a, b in ((2, 3), (10, 32), (7, 8), (100, 1), (5, 5), (41, 1))]


class Expression(BaseModel):
    expression: str


class Answer(BaseModel):
    value: str


class SumTask(ors.Environment):
    """What is a + b?"""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return TASKS

    def get_prompt(self):
        return [ors.TextBlock(text=f"What is {self.task_spec['a']} + {self.task_spec['b']}? "
                                   "Call `answer` with the number.")]

    @ors.tool
    def calculator(self, params: Expression) -> ors.ToolOutput:
        """Add two integers written as A+B."""
        left, _, right = params.expression.partition("+")
        try:
            value = str(int(left) + int(right))
        except ValueError:
            value = "error: write A+B"
        return ors.ToolOutput(blocks=[ors.TextBlock(text=value)], reward=None, finished=False)

    @ors.tool
    def answer(self, params: Answer) -> ors.ToolOutput:
        """Give the final answer."""
        right = params.value.strip() == str(self.task_spec["a"] + self.task_spec["b"])
        return ors.ToolOutput(blocks=[ors.TextBlock(text="correct" if right else "wrong")],
                              reward=1.0 if right else 0.0, finished=True, metadata={"right": right})


def app():
    return ors.Server([SumTask]).app

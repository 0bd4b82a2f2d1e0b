"""Question answering over a dataset: one question per episode, exact-match reward."""

from __future__ import annotations

import os
from typing import Any

from gem_core.errors import GemError

from gem_envs.data import DatasetEnv, load_rows
from gem_envs.qa.answers import boxed_answer, exact_match, gold_answers, tagged_answer

TAGGED_PROMPT = (
    "Answer the question. Think it through first if you need to, then give only the final "
    "answer, as short as possible, between <answer> and </answer>.\n\n"
    "Question: {question}\n"
)
BOXED_PROMPT = (
    "Answer the question. Think it through first if you need to, then give only the final "
    "answer in \\boxed{{}}.\n\n"
    "Question: {question}\n"
)


class Reward:
    """Rewards of the QA environments (documented in docs/envs.md)."""

    CORRECT = 1.0
    WRONG = 0.0
    NO_ANSWER = 0.0  # the reference's value; ``format_penalty`` changes it


class QaEnv(DatasetEnv):
    """A question from a dataset; the answer is read from the last ``<answer>...</answer>``
    (or the last ``\\boxed{}`` with ``extract_boxed=True``) and scored by exact match against
    every gold answer. One step per episode.

    The data options (``dataset_name``, ``split``, ``path``, ``dataset``) are those of
    :func:`gem_envs.data.load_rows`. Episodes visit the questions as
    :class:`~gem_envs.data.RowOrder` says: ``reset(seed)`` draws an order of the questions (or,
    with ``shuffle=False``, starts at question ``seed``), ``reset()`` continues it, so every
    question comes once per pass, and ``reset(index=i)`` returns question ``i``.
    """

    def __init__(self, dataset_name: str | None = None, split: str | None = None,
                 path: str | os.PathLike[str] | None = None, dataset: Any = None, *,
                 question_key: str = "question", answer_key: str = "answer", shuffle: bool = True,
                 extract_boxed: bool = False, prompt_template: str | None = None,
                 format_penalty: float = Reward.NO_ANSWER, env_id: str | None = None):
        env_id = env_id or "a QA environment"
        rows = load_rows(env_id, dataset_name=dataset_name, split=split, path=path, dataset=dataset,
                         columns={"question_key": question_key, "answer_key": answer_key})
        super().__init__(rows, shuffle=shuffle, env_id=env_id)
        self.question_key, self.answer_key = question_key, answer_key
        self.extract_boxed = extract_boxed
        self.prompt_template = prompt_template or (BOXED_PROMPT if extract_boxed else TAGGED_PROMPT)
        if "{question}" not in self.prompt_template:
            raise GemError("prompt_template must contain '{question}'.")
        self.format_penalty = float(format_penalty)
        self.question = ""
        self.answers: list[str] = []
        self.done = True

    def reset(self, seed: int | None = None, index: int | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        row = self.next_row(seed, index)
        self.question = str(row[self.question_key])
        self.answers = gold_answers(row[self.answer_key])
        self.done = False
        return self.prompt_template.format(question=self.question), {"index": self.index}

    def extract(self, action: str) -> str | None:
        return boxed_answer(action) if self.extract_boxed else tagged_answer(action)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.done:
            raise GemError("The episode is over: call reset() before step().")
        self.done = True
        answer = self.extract(action)
        info: dict[str, Any] = {"index": self.index, "answer": answer, "gold_answers": list(self.answers)}
        if answer is None:
            where = "\\boxed{}" if self.extract_boxed else "<answer>...</answer>"
            info.update(correct=False, format_error=True)
            return f"No answer found: write the final answer in {where}.", self.format_penalty, True, False, info
        correct = exact_match(answer, self.answers)
        info.update(correct=correct, format_error=False)
        reward = Reward.CORRECT if correct else Reward.WRONG
        return ("Correct." if correct else "Not correct."), reward, True, False, info

    def sample_random_action(self) -> str:
        guess = self.action_rng.choice(["yes", "no", "unknown", "1", "Paris"])
        return f"\\boxed{{{guess}}}" if self.extract_boxed else f"<answer>{guess}</answer>"

    def clone(self) -> QaEnv:
        twin = super().clone()
        twin.answers = list(self.answers)
        return twin

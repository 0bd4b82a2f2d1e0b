"""The Almanac: an encyclopedia of an invented archipelago and questions about it, shipped with
GEM so that question answering and search run offline (see ``build.py``)."""

from __future__ import annotations

from pathlib import Path

from gem_core.errors import GemError

from gem_envs.dataset_rows import load_rows
from gem_envs.qa.env import QaEnv, Reward

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus.jsonl"  # one document a line: id, title, text, kind
QUESTIONS = HERE / "questions.jsonl"  # one question a line: id, question, answers, hops


class AlmanacEnv(QaEnv):
    """Questions about the Almanac's invented world. One-hop questions name what to look up;
    two-hop questions need the answer of one search to make the next. ``hops`` keeps only
    questions of that kind."""

    def __init__(
        self,
        hops: int | None = None,
        prompt_template: str | None = None,
        format_penalty: float = Reward.NO_ANSWER,
        env_id: str = "qa:Almanac-v0",
    ):
        if hops not in (None, 1, 2):
            raise GemError(f"hops must be 1, 2 or None (all questions), not {hops!r}.")
        rows = load_rows(env_id, data_path=QUESTIONS)
        if hops is not None:
            rows = [row for row in rows if row["hops"] == hops]
        self.hops = hops
        super().__init__(dataset=rows, question_key="question", answer_key="answers",
                         prompt_template=prompt_template, format_penalty=format_penalty, env_id=env_id)

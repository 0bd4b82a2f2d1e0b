"""Episodes: what an agent saw, did and earned, turn by turn.

An :class:`Episode` is what flows from vector environments to advantage estimators and adapters.
Each :class:`Turn` holds the observation the agent answered, its action, and what the environment
returned for it; the observation that followed the last action is kept as
``Episode.final_observation``. :func:`turn_addition` reads back what each turn added to the
conversation, for whoever shows or exports episodes.

Every episode says how it ended (:attr:`Episode.outcome`): ``"completed"`` (the environment
ended it), ``"cut"`` (a limit ended it: the environment's own truncation, a turn limit, a token
budget; the agent's doing, trained as usual) or ``"failed"`` (the infrastructure broke it: see
:class:`Failure`). A failed episode teaches nothing: estimators leave it out of their statistics
(``valid=``), trainers out of the loss.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gem_core.errors import GemError
from gem_core.images import IMAGE


#: How an episode ended (:attr:`Episode.outcome`).
COMPLETED, CUT, FAILED = "completed", "cut", "failed"
OUTCOMES = (COMPLETED, CUT, FAILED)

#: What can fail an episode (:attr:`Failure.kind`), none of it the agent's doing.
FAILURE_KINDS = {
    "error": "the environment raised",
    "malformed": "the environment returned something that is not a transition (a reward that is not a finite number, ...)",
    "timeout": "an environment call ran past step_timeout",
    "deadline": "the episode's or the collection's deadline passed",
    "host_lost": "the host running the environment was lost",
    "sandbox": "a sandbox or container the environment runs died",
    "harness": "the agent program playing the episode crashed or hung",
}


@dataclass
class Failure:
    """Why the infrastructure failed an episode: ``kind`` (one of :data:`FAILURE_KINDS`), what
    failed (``error``), in which call (``phase``: ``"reset"``, ``"step"``, ``"policy"``, ...), and
    after how many complete turns (``turn``)."""

    kind: str
    error: str = ""
    phase: str = ""
    turn: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAILURE_KINDS:
            raise GemError(f"Unknown failure kind {self.kind!r}; the kinds are: {', '.join(FAILURE_KINDS)}.")

    @classmethod
    def from_fault(cls, fault: dict[str, Any], turn: int | None = None) -> Failure:
        """The failure a vector environment's ``info["fault"]`` report describes."""
        kind = fault.get("kind", "error")
        error = fault.get("error") or (f"ran past {fault['timeout_s']:g} s" if fault.get("timeout_s") else
                                       f"ran past its deadline ({fault['deadline_s']:.3g} s left)"
                                       if fault.get("deadline_s") is not None else "")
        return cls(kind if kind in FAILURE_KINDS else "error", str(error), str(fault.get("phase", "")), turn)


@dataclass
class Turn:
    """One step: ``observation`` was shown, ``action`` was taken, the rest came back.
    ``policy_version`` names the policy that sampled the action, where a trainer records it (an
    episode carried over from one collection into the next holds turns of several versions)."""

    observation: str
    action: str
    reward: float
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    policy_version: int | None = None


@dataclass
class Episode:
    """A finished (or cut-off, or failed) episode of one environment."""

    env_id: str
    seed: int | None
    turns: list[Turn] = field(default_factory=list)
    final_observation: str = ""
    #: The seat this episode was played from, for one agent's part of a multi-agent episode
    #: (see :func:`gem_core.multiagent.split_by_agent`); None otherwise.
    agent: str | None = None
    #: Why the infrastructure failed this episode; None when it did not.
    failure: Failure | None = None

    @property
    def outcome(self) -> str:
        """``"failed"`` when :attr:`failure` is set, ``"completed"`` when the environment ended
        the episode (its last turn terminated), else ``"cut"`` (see the module documentation)."""
        if self.failure is not None:
            return FAILED
        return COMPLETED if self.turns and self.turns[-1].terminated else CUT

    @property
    def valid(self) -> bool:
        """Whether the episode counts for training and statistics: it did not fail."""
        return self.failure is None

    def fail(self, kind: str, error: str = "", phase: str = "") -> None:
        """Mark the episode failed (kind ``kind``) after the turns it holds; a failure already
        recorded stays."""
        if self.failure is None:
            self.failure = Failure(kind, error, phase, len(self.turns))

    @property
    def rewards(self) -> list[float]:
        return [t.reward for t in self.turns]

    @property
    def total_reward(self) -> float:
        return math.fsum(t.reward for t in self.turns)

    @property
    def num_turns(self) -> int:
        return len(self.turns)

    @property
    def done(self) -> bool:
        """True when the last turn ended the episode."""
        return bool(self.turns) and (self.turns[-1].terminated or self.turns[-1].truncated)

    def discounted_returns(self, gamma: float) -> list[float]:
        """``G_t = r_t + gamma * G_{t+1}`` for every turn."""
        returns, running = [0.0] * len(self.turns), 0.0
        for i in range(len(self.turns) - 1, -1, -1):
            running = self.turns[i].reward + gamma * running
            returns[i] = running
        return returns

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "outcome": self.outcome}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Episode:
        try:
            turns = [Turn(**t) for t in data.get("turns", [])]
            failure = data.get("failure")
            return cls(env_id=data["env_id"], seed=data.get("seed"), turns=turns,
                       final_observation=data.get("final_observation", ""), agent=data.get("agent"),
                       failure=None if failure is None else Failure(**failure))
        except (KeyError, TypeError) as e:
            raise GemError(f"Not an episode record: {e}") from e


def episode_success(episode: Episode) -> bool:
    """Whether an episode was won: its last turn's ``info["success"]`` when the environment
    reports one, a game's ``info["outcome"] == "win"`` (so on a ``-vs-bot`` game the success rate
    is the win rate against the bot), otherwise whether its last reward is positive."""
    if not episode.turns:
        return False
    last = episode.turns[-1]
    return last_turn_success(last.info, last.reward)


def last_turn_success(info: dict[str, Any], reward: float) -> bool:
    """:func:`episode_success` from the last turn's ``info`` and reward, for code that plays an
    episode turn by turn (the training libraries' adapters)."""
    if "outcome" in info:
        return info["outcome"] == "win"
    if "success" in info:
        return bool(info["success"])
    return reward > 0


def episode_stats(episodes: Sequence[Episode]) -> dict[str, float | None]:
    """Mean return (undiscounted sum of rewards), success rate, turns per episode, turns per won
    episode (None when none was won), the share of episodes that ended on a format error, and the
    share that called a tool at least once, all over the episodes that did not fail; then the
    share of all episodes that failed (``failed_rate``) and, per failure kind, ``failed_<kind>``
    (see :func:`failure_counts`)."""
    failed = failure_counts(episodes)
    everyone = len(episodes)
    episodes = [e for e in episodes if e.valid]
    n = max(len(episodes), 1)
    won = [e.num_turns for e in episodes if episode_success(e)]
    return {
        "episodes": float(everyone),
        "failed_rate": sum(failed.values()) / max(everyone, 1),
        **{f"failed_{kind}": count / max(everyone, 1) for kind, count in failed.items()},
        "mean_return": math.fsum(e.total_reward for e in episodes) / n,
        "success_rate": sum(episode_success(e) for e in episodes) / n,
        "turns_per_episode": sum(e.num_turns for e in episodes) / n,
        "turns_per_success": sum(won) / len(won) if won else None,
        "format_error_rate": sum(bool(e.turns and e.turns[-1].info.get("format_error")) for e in episodes) / n,
        "tool_call_rate": sum(any(t.info.get("use_tool") for t in e.turns) for e in episodes) / n,
    }


def failure_counts(episodes: Iterable[Episode]) -> dict[str, int]:
    """How many of ``episodes`` failed, per failure kind (only the kinds that occur)."""
    counts: dict[str, int] = {}
    for episode in episodes:
        if episode.failure is not None:
            counts[episode.failure.kind] = counts.get(episode.failure.kind, 0) + 1
    return counts


def save_episodes(episodes: Iterable[Episode], path: str | os.PathLike[str], *, append: bool = False) -> int:
    """Write episodes as JSON lines; returns how many were written. Info values that JSON cannot
    hold are written as their ``repr``."""
    count = 0
    with open(path, "a" if append else "w", encoding="utf-8") as f:
        for episode in episodes:
            f.write(json.dumps(episode.to_dict(), ensure_ascii=False, default=repr))
            f.write("\n")
            count += 1
    return count


def iter_episodes(path: str | os.PathLike[str]) -> Iterator[Episode]:
    """Read episodes written by :func:`save_episodes`, one at a time."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise GemError(f"{path}, line {number}: not valid JSON ({e.msg})") from None
            try:
                yield Episode.from_dict(record)
            except GemError as e:
                raise GemError(f"{path}, line {number}: {e}") from None


def load_episodes(path: str | os.PathLike[str]) -> list[Episode]:
    """All episodes in a JSONL file written by :func:`save_episodes`."""
    if not Path(path).exists():
        raise GemError(f"No episode file at {path}")
    return list(iter_episodes(path))


def turn_addition(before: str, action: str, after: str) -> str | list[dict[str, Any]]:
    """What the environment added to the conversation after ``action``, from the observation the
    action answered (``before``; empty for none) and the one that followed (``after``).

    Observations are recorded as the agent saw them, so a history wrapper's rendering repeats the
    conversation so far. When ``after`` is a list of chat messages (:func:`chat_messages`) that
    extends ``before``'s, the messages it adds come back, the agent's own left out; when it is text
    that extends ``before``, the text it adds, without the action that opens it; else ``after``
    as it is.
    """
    old, new = (chat_messages(before) if before else []), chat_messages(after)
    if old is not None and new is not None and new[:len(old)] == old:
        return [m for m in new[len(old):] if m.get("role") != "assistant"]
    if before and after.startswith(before):
        rest = after[len(before):]
        trimmed = rest.lstrip()
        return (trimmed[len(action):] if action and trimmed.startswith(action) else rest).strip("\n")
    return after


def chat_messages(observation: str) -> list[dict[str, Any]] | None:
    """``observation`` as the chat messages it holds, when it is a JSON list of them (what ``gem
    eval`` sends an endpoint), else None."""
    if not observation.startswith("[{"):
        return None
    try:
        value = json.loads(observation)
    except ValueError:
        return None
    if isinstance(value, list) and all(isinstance(m, dict) and "role" in m and "content" in m for m in value):
        return value
    return None


def message_text(content: Any) -> str:
    """A chat message's content as text: text parts as they are, an image part as :data:`IMAGE`."""
    if isinstance(content, list):
        return "".join(part.get("text", "") if part.get("type") == "text" else IMAGE
                       for part in content if isinstance(part, dict))
    return "" if content is None else str(content)

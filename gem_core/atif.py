"""Episodes as Harbor trajectories: the Agent Trajectory Interchange Format (ATIF).

Harbor writes an agent's run to ``/logs/agent/trajectory.json`` in ATIF (a JSON object:
``schema_version``, ``session_id``, ``agent``, ``steps``, ``final_metrics``, ``extra``), and its
viewers read it. :func:`to_atif` writes any :class:`~gem_core.episodes.Episode` that way:

* the first step is the task, the episode's first observation (``source: "user"``; a system
  message before it becomes a ``"system"`` step);
* each turn is an ``"agent"`` step whose ``message`` is the action and whose ``observation``
  holds what the environment answered, with the turn's reward, ``terminated``, ``truncated`` and
  info in ``extra``.

Observations are recorded as the agent saw them, so a history wrapper's rendering repeats the
episode so far: each step's observation is what its turn added
(:func:`~gem_core.episodes.turn_addition`). Episodes record no times, so steps carry no
``timestamp``.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from gem_core.episodes import Episode, chat_messages, message_text, turn_addition

SCHEMA_VERSION = "ATIF-v1.4"


def to_atif(episode: Episode, *, agent_name: str = "gem", agent_version: str | None = None,
            model_name: str | None = None, session_id: str | None = None) -> dict[str, Any]:
    """``episode`` as an ATIF trajectory (a JSON-ready dict); ``agent_name`` and ``model_name``
    name the policy that played it, ``session_id`` the run (a new UUID by default)."""
    if agent_version is None:
        from gem_core import __version__ as agent_version
    agent = {"name": agent_name, "version": agent_version, **({"model_name": model_name} if model_name else {})}
    first = episode.turns[0].observation if episode.turns else episode.final_observation
    steps = _opening_steps(first)
    for index, turn in enumerate(episode.turns):
        after = episode.turns[index + 1].observation if index + 1 < len(episode.turns) else episode.final_observation
        steps.append({
            "step_id": len(steps) + 1, "source": "agent", "message": turn.action,
            "observation": {"results": [{"content": _added(turn.observation, turn.action, after)}]},
            "extra": _plain({"reward": turn.reward, "terminated": turn.terminated, "truncated": turn.truncated,
                             "info": turn.info}),
        })
    return {
        "schema_version": SCHEMA_VERSION,
        "session_id": session_id or str(uuid.uuid4()),
        "agent": agent,
        "steps": steps,
        "final_metrics": {"total_steps": len(steps), "extra": {"total_reward": episode.total_reward,
                                                               "turns": episode.num_turns}},
        "extra": _plain({"env_id": episode.env_id, "seed": episode.seed, "agent_seat": episode.agent}),
    }


def write_trajectory(episode: Episode, path: str | os.PathLike[str], **options: Any) -> Path:
    """Write ``episode`` as an ATIF ``trajectory.json`` at ``path`` (folders made); options as
    :func:`to_atif`."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(to_atif(episode, **options), ensure_ascii=False, indent=1))
    return target


def _opening_steps(observation: str) -> list[dict[str, Any]]:
    messages = chat_messages(observation)
    if messages is None:
        return [{"step_id": 1, "source": "user", "message": observation}]
    steps = [{"step_id": i + 1, "source": "system" if m.get("role") == "system" else "user",
              "message": message_text(m.get("content"))} for i, m in enumerate(messages)]
    return steps or [{"step_id": 1, "source": "user", "message": ""}]


def _added(before: str, action: str, after: str) -> str:
    """What the environment showed after ``action``, as text."""
    added = turn_addition(before, action, after)
    return added if isinstance(added, str) else "\n".join(message_text(m.get("content")) for m in added)


def _plain(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` as plain JSON: what JSON cannot hold as its ``repr`` (as :func:`save_episodes`
    writes it), NaN and infinities as strings."""
    return json.loads(json.dumps(value, default=repr), parse_constant=str)

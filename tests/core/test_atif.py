"""Episodes as Harbor trajectories (ATIF): played episodes, plain and through history wrappers."""

from __future__ import annotations

import json

import gem_core
from gem_core.atif import SCHEMA_VERSION, to_atif, write_trajectory
from gem_core.episodes import Episode, Turn
from gem_trainer.evaluation.evaluate import MessagesTemplate

AGENT_ONLY = {"model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics"}


def check_atif(trajectory: dict) -> None:
    """What ATIF requires of a trajectory (Harbor's RFC 0001, v1.4)."""
    assert set(trajectory) <= {"schema_version", "session_id", "agent", "steps", "notes", "final_metrics", "extra"}
    assert trajectory["schema_version"] == SCHEMA_VERSION and isinstance(trajectory["session_id"], str)
    assert isinstance(trajectory["agent"]["name"], str) and isinstance(trajectory["agent"]["version"], str)
    assert [s["step_id"] for s in trajectory["steps"]] == list(range(1, len(trajectory["steps"]) + 1))
    for step in trajectory["steps"]:
        assert step["source"] in ("system", "user", "agent") and isinstance(step["message"], str)
        if step["source"] != "agent":
            assert not AGENT_ONLY & set(step)
        for result in step.get("observation", {"results": []})["results"]:
            assert set(result) <= {"source_call_id", "content", "subagent_trajectory_ref"}
    json.dumps(trajectory, allow_nan=False)


def play(env_id: str, actions: list[str], wrapper: tuple | None = None) -> Episode:
    env = gem_core.make(env_id)
    if wrapper is not None:
        env = gem_core.registry.apply_wrappers(env, [wrapper])
    observation, _ = env.reset(seed=0)
    episode = Episode(env_id, 0)
    for action in actions:
        next_observation, reward, terminated, truncated, info = env.step(action)
        episode.turns.append(Turn(observation, action, reward, terminated, truncated, info))
        observation = next_observation
        if terminated or truncated:
            break
    episode.final_observation = observation
    env.close()
    return episode


def test_a_played_episode_is_a_valid_trajectory_step_by_step(tmp_path):
    episode = play("game:GuessTheNumber-v0-easy", ["\\boxed{5}", "not a guess", "\\boxed{3}"])
    trajectory = to_atif(episode, agent_name="scripted", model_name="m", session_id="run-1")
    check_atif(trajectory)
    steps = trajectory["steps"]
    assert (trajectory["session_id"], trajectory["agent"]["model_name"]) == ("run-1", "m")
    assert steps[0] == {"step_id": 1, "source": "user", "message": episode.turns[0].observation}
    assert [s["message"] for s in steps[1:]] == [t.action for t in episode.turns]
    shown = [t.observation for t in episode.turns[1:]] + [episode.final_observation]
    assert [s["observation"]["results"][0]["content"] for s in steps[1:]] == shown
    assert [s["extra"]["reward"] for s in steps[1:]] == episode.rewards
    assert trajectory["final_metrics"] == {"total_steps": len(steps), "extra": {"total_reward": episode.total_reward,
                                                                                "turns": episode.num_turns}}
    assert trajectory["extra"]["env_id"] == "game:GuessTheNumber-v0-easy"
    path = write_trajectory(episode, tmp_path / "agent" / "trajectory.json", session_id="run-1")
    assert json.loads(path.read_text())["steps"] == steps


def test_history_renderings_give_each_step_only_what_it_added():
    """What the wrapper added to an observation (a game's prompt to guess again) is part of what
    the agent saw, so it stays."""
    actions = ["\\boxed{5}", "\\boxed{2}"]
    raw = play("game:GuessTheNumber-v0-easy", actions)
    as_messages = play("game:GuessTheNumber-v0-easy", actions, ("concat_chat", {"tokenizer": MessagesTemplate()}))
    as_text = play("game:GuessTheNumber-v0-easy", actions, ("concat_with_action", {}))
    expected = [s["observation"]["results"][0]["content"].strip() for s in to_atif(raw)["steps"][1:]]
    for rendered in (as_messages, as_text):
        trajectory = to_atif(rendered)
        check_atif(trajectory)
        added = [s["observation"]["results"][0]["content"].strip() for s in trajectory["steps"][1:]]
        assert len(added) == len(expected) and all(a.startswith(e) for a, e in zip(added, expected)), added
        assert all(actions[0] not in a for a in added)  # the history and the action are not repeated
        assert trajectory["steps"][0]["message"].strip().startswith(raw.turns[0].observation.strip()[:40])


def test_an_episode_with_no_turn_and_odd_info_still_exports():
    episode = Episode("x:Y-v0", None, final_observation="[{not json")
    episode.turns = []
    trajectory = to_atif(episode)
    check_atif(trajectory)
    assert trajectory["steps"] == [{"step_id": 1, "source": "user", "message": "[{not json"}]
    odd = Episode("x:Y-v0", 3, [Turn("o", "a", 1.0, True, info={"when": object(), "nan": float("nan")})], "end")
    trajectory = to_atif(odd)
    check_atif(trajectory)
    step = trajectory["steps"][1]
    assert step["extra"]["info"]["when"].startswith("<object object") and step["extra"]["info"]["nan"] == "NaN"
    assert step["observation"]["results"][0]["content"] == "end"

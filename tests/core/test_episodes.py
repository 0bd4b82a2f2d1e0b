import json

import pytest

from gem_core import GemError
from gem_core.episodes import Episode, Turn, load_episodes, save_episodes


def episode():
    return Episode("game:GuessTheNumber-v0-easy", 3, [
        Turn("start", r"\boxed{5}", 0.0, info={"turn": 1}),
        Turn("higher", r"\boxed{8}", 1.0, terminated=True, info={"turn": 2, "obj": object()}),
    ], final_observation="Correct!")


def test_returns_and_totals():
    ep = episode()
    assert ep.rewards == [0.0, 1.0] and ep.total_reward == 1.0 and ep.num_turns == 2 and ep.done
    assert ep.discounted_returns(0.9) == pytest.approx([0.9, 1.0])
    assert ep.discounted_returns(0.0) == [0.0, 1.0]


def test_jsonl_round_trip(tmp_path):
    path = tmp_path / "eps.jsonl"
    assert save_episodes([episode(), episode()], path) == 2
    save_episodes([episode()], path, append=True)
    loaded = load_episodes(path)
    assert len(loaded) == 3
    assert loaded[0].turns[1].action == r"\boxed{8}" and loaded[0].final_observation == "Correct!"
    assert loaded[0].turns[1].info["obj"].startswith("<object")  # not JSON: kept as its repr
    assert loaded[0].turns[0] == episode().turns[0]


def test_bad_files_give_clear_errors(tmp_path):
    with pytest.raises(GemError, match="No episode file"):
        load_episodes(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(episode().to_dict(), default=repr) + "\n{not json\n")
    with pytest.raises(GemError, match="line 2"):
        load_episodes(bad)
    bad.write_text('{"seed": 1}\n')
    with pytest.raises(GemError, match="line 1: Not an episode record"):
        load_episodes(bad)


def test_an_episode_says_how_it_ended_and_a_failure_survives_a_round_trip(tmp_path):
    from gem_core.episodes import Failure, episode_stats

    completed, cut, failed = episode(), episode(), episode()
    cut.turns[-1].terminated, cut.turns[-1].truncated = False, True
    failed.fail("sandbox", "the container died", "step")
    assert [e.outcome for e in (completed, cut, failed)] == ["completed", "cut", "failed"]
    assert failed.failure == Failure("sandbox", "the container died", "step", 2) and not failed.valid
    failed.fail("error", "a later failure")  # the first failure stays
    assert failed.failure.kind == "sandbox"
    save_episodes([completed, failed], tmp_path / "e.jsonl")
    back = load_episodes(tmp_path / "e.jsonl")
    assert [e.outcome for e in back] == ["completed", "failed"] and back[1].failure == failed.failure
    stats = episode_stats([completed, cut, failed])
    assert stats["episodes"] == 3 and stats["failed_rate"] == pytest.approx(1 / 3)
    assert stats["failed_sandbox"] == pytest.approx(1 / 3)
    assert stats["success_rate"] == 1.0  # over the two valid episodes: both won (reward 1)
    with pytest.raises(GemError, match="Unknown failure kind 'oops'"):
        Failure("oops")

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

"""pass@k and best-of-k on a fixed episodes file, against a hand computation."""

from __future__ import annotations

import math

import pytest

from gem_trainer.evaluation.folder import EPISODES_FILE, read_episodes
from gem_trainer.evaluation.scores import pass_at_k, summarise
from tests.helpers import REPO

FIXTURE = REPO / "tests" / "fixtures" / "eval-run"


def test_pass_at_k_of_a_fixed_episodes_file_matches_a_hand_computation():
    records = read_episodes(FIXTURE / EPISODES_FILE)
    episodes = [episode for episode, _ in records]
    # the file: seeds 0, 1, 2, four samples each, won 1, 2 and 0 times; returns 1.0 when won,
    # else 0.3 (out of turns) or -0.1 (a format error)
    wins = {seed: sum(e.turns[-1].info["success"] for e in episodes if e.seed == seed) for seed in (0, 1, 2)}
    assert wins == {0: 1, 1: 2, 2: 0} and sorted(sample for _, sample in records) == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    report = summarise("game:GuessTheNumber-v0-easy", episodes, seconds=1.0)
    by_hand = {
        "1": (1 / 4 + 2 / 4 + 0) / 3,
        "2": ((1 - 3 / 6) + (1 - 1 / 6) + 0) / 3,  # 1 - C(n - c, 2) / C(4, 2)
        "3": ((1 - 1 / 4) + 1 + 0) / 3,  # C(3, 3) / C(4, 3) = 1/4; C(2, 3) = 0
        "4": (1 + 1 + 0) / 3,
    }
    assert report.samples == 4 and report.starts == 3 and report.episodes == 12
    assert report.pass_at_k.keys() == by_hand.keys()
    for k, value in by_hand.items():
        assert report.pass_at_k[k] == pytest.approx(value, abs=1e-12), k
    assert report.pass_at_k["1"] == pytest.approx(report.success_rate)
    assert report.best_of_k_return == pytest.approx((1.0 + 1.0 + 0.3) / 3)


def test_the_estimator_against_its_definition():
    for n in range(1, 8):
        for c in range(n + 1):
            for k in range(1, n + 1):
                expected = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert pass_at_k(n, c, k) == pytest.approx(expected)
    assert pass_at_k(5, 0, 5) == 0.0 and pass_at_k(5, 1, 5) == 1.0
    with pytest.raises(ValueError, match="1 <= k <= samples"):
        pass_at_k(3, 1, 4)


def test_starts_with_fewer_samples_count_only_where_they_have_k():
    episodes = [episode for episode, _ in read_episodes(FIXTURE / EPISODES_FILE)]
    cut = [e for e in episodes if not (e.seed == 2 and e.turns[0].action != "\\boxed{2}")]  # seed 2: 2 samples left
    report = summarise("game:GuessTheNumber-v0-easy", cut, seconds=0.0)
    assert report.pass_at_k["2"] == pytest.approx(((1 - 3 / 6) + (1 - 1 / 6) + 0) / 3)
    assert report.pass_at_k["3"] == pytest.approx(((1 - 1 / 4) + 1) / 2)  # seed 2 has no third sample

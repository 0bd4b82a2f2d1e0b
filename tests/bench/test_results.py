"""Medians, ratios and speedups: above 1 means ours is better, whichever way a metric goes."""

import pytest

from bench.results import MetricSummary


def test_lower_is_better_speedup_is_reference_over_ours():
    m = MetricSummary("w", "latency", "s", "lower", ours=[0.1, 0.3, 0.2], reference=[1.0, 0.6])
    assert m.ours_median == pytest.approx(0.2)
    assert m.reference_median == pytest.approx(0.8)
    assert m.ratio == pytest.approx(0.25)
    assert m.speedup == pytest.approx(4.0)


def test_higher_is_better_speedup_is_ours_over_reference():
    m = MetricSummary("w", "throughput", "steps/s", "higher", ours=[50.0], reference=[200.0])
    assert m.ratio == pytest.approx(0.25)
    assert m.speedup == pytest.approx(0.25)


@pytest.mark.parametrize("ours, reference, ratio, lower_speedup, higher_speedup", [
    ([1.0], [], None, None, None),
    ([], [1.0], None, None, None),
    ([0.0], [2.0], 0.0, None, 0.0),
    ([2.0], [0.0], None, 0.0, None),
])
def test_missing_medians_and_zero_denominators_give_no_figure(ours, reference, ratio, lower_speedup, higher_speedup):
    lower = MetricSummary("w", "t", "s", "lower", ours=ours, reference=reference)
    higher = MetricSummary("w", "t", "s", "higher", ours=ours, reference=reference)
    assert lower.ratio == ratio and higher.ratio == ratio
    assert lower.speedup == lower_speedup
    assert higher.speedup == higher_speedup

"""Parsing what a workload prints, and the order runs are scheduled in."""

import json

import pytest

from bench.runner import ProtocolError, parse_metrics, schedule


def line(metrics) -> str:
    return json.dumps({"metrics": metrics})


def test_reads_the_last_non_empty_line_and_ignores_chatter_before_it():
    stdout = "warming up\n{\"not\": \"this\"}\n" + line({"steps_per_s": {"value": 12, "unit": "steps/s", "better": "higher"}}) + "\n\n"
    metrics = parse_metrics(stdout)
    assert list(metrics) == ["steps_per_s"]
    assert metrics["steps_per_s"].value == 12.0 and isinstance(metrics["steps_per_s"].value, float)
    assert metrics["steps_per_s"].unit == "steps/s" and metrics["steps_per_s"].better == "higher"


@pytest.mark.parametrize("stdout, complaint", [
    ("", "no output"),
    ("done in 3 s\n", "not JSON"),
    (line({}), "no metrics"),
    (json.dumps({"results": {}}), "no metrics"),
    (json.dumps([1, 2]), "no metrics"),
    (line({"t": 3}), "not an object"),
    (line({"t": {"value": "fast", "unit": "s", "better": "lower"}}), "not a finite number"),
    (line({"t": {"value": True, "unit": "s", "better": "lower"}}), "not a finite number"),
    ('{"metrics": {"t": {"value": NaN, "unit": "s", "better": "lower"}}}', "not a finite number"),
    (line({"t": {"value": 1, "unit": None, "better": "lower"}}), "not a string"),
    (line({"t": {"value": 1, "unit": "s", "better": "smaller"}}), "better='smaller'"),
])
def test_malformed_output_is_rejected_with_the_protocol_spelled_out(stdout, complaint):
    with pytest.raises(ProtocolError) as error:
        parse_metrics(stdout)
    assert complaint in str(error.value)
    assert '"better": "higher" | "lower"' in str(error.value)


def test_schedule_alternates_which_implementation_goes_first():
    assert schedule(3, ["ours", "reference"]) == [
        (0, "ours"), (0, "reference"), (1, "reference"), (1, "ours"), (2, "ours"), (2, "reference"),
    ]
    assert schedule(2, ["ours"]) == [(0, "ours"), (1, "ours")]

"""The messages of the protocol: what GEM's info becomes on the wire, and what is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gem_serve import protocol


def test_info_becomes_json_that_keeps_its_values():
    info = {"board": np.arange(4).reshape(2, 2), "score": np.float32(1.5), "count": np.int64(3),
            "nested": {1: (True, None, {"x"})}, "raw": b"\x00\x01", "other": object}
    data = protocol.observation_data("text", 0.5, True, False, info, env_id="e", step_count=2)
    decoded = json.loads(protocol.encode(data))
    sent = decoded["observation"]["metadata"]
    assert decoded["observation"]["prompt"] == "text" and decoded["reward"] == 0.5 and decoded["done"] is True
    assert sent["terminated"] is True and sent["truncated"] is False and sent["env_id"] == "e"
    assert sent["info"]["board"] == [[0, 1], [2, 3]] and sent["info"]["score"] == 1.5 and sent["info"]["count"] == 3
    assert sent["info"]["nested"] == {"1": [True, None, ["x"]]} and sent["info"]["raw"] == "AAE="
    assert sent["info"]["other"] == repr(object)


@pytest.mark.parametrize("data, fragment", [
    (None, "needs"), ("text", "needs"), ({}, '"message": a string'), ({"message": 3}, "a string"),
    ({"message": "x", "code": "y"}, "Unknown field"),
])
def test_a_step_without_a_text_action_is_refused_with_what_is_expected(data, fragment):
    with pytest.raises(protocol.ProtocolError, match=fragment) as caught:
        protocol.action_text(data)
    assert caught.value.code == protocol.VALIDATION_ERROR


def test_reset_arguments():
    assert protocol.reset_arguments(None) == (None, None, {})
    assert protocol.reset_arguments({"seed": 4, "episode_id": "a", "index": 2}) == (4, "a", {"index": 2})
    for bad in ({"seed": 1.5}, {"seed": True}, {"episode_id": 3}, [1]):
        with pytest.raises(protocol.ProtocolError):
            protocol.reset_arguments(bad)
    with pytest.raises(protocol.ProtocolError) as caught:
        protocol.decode("{")
    assert caught.value.code == protocol.INVALID_JSON

"""Property tests: whatever an LLM writes, every game answers with a documented transition."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gem_core
from gem_core.parsing import last_boxed
from gem_envs.game.base import MAX_ANSWER_CHARS, parse_answer
from tests.games.helpers import GAMES, check_transition

# Fragments that make plausible and implausible answers when glued together.
FRAGMENTS = [
    "\\boxed{", "\\boxed {", "\\fbox{", "{", "}", "\\boxed", " ", "\n", "1", "12", "-3", "0", "99999999999",
    "a", "E", "up", "left", "reveal", "flag", "A", "C", "A C", "reveal 1 2", "1 2 3", "0 0 A", "1 2 1 4",
    "CRANE", "é", "中", "🙂", "\x00", ",", "->", "\\frac{1}{2}",
]
garbled = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)
boxed_text = st.text(max_size=60).map(lambda inner: f"answer: \\boxed{{{inner}}}")
huge = st.builds(lambda piece, times: piece * times, st.sampled_from(FRAGMENTS + ["x"]), st.integers(1000, 30000))
actions = st.one_of(st.just(""), st.text(), garbled, boxed_text, huge)

PROFILE = settings(
    max_examples=40, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("game", GAMES)
@PROFILE
@given(moves=st.lists(actions, min_size=1, max_size=4), seed=st.integers(0, 2**32))
def test_any_text_gives_a_documented_transition(game, moves, seed):
    env = gem_core.make(f"game:{game}-v0-random")
    env.reset(seed=seed)
    for action in moves:
        result = env.step(action)
        check_transition(result)
        if result[2] or result[3]:
            env.reset()


@PROFILE
@given(text=st.one_of(st.text(), garbled, boxed_text))
def test_fast_answer_parsing_agrees_with_last_boxed(text):
    expected = last_boxed(text)
    if expected is not None:
        expected = expected.strip() if len(expected) <= MAX_ANSWER_CHARS else None
    assert parse_answer(text) == expected


@pytest.mark.parametrize("game", GAMES)
def test_edge_inputs(game):
    env = gem_core.make(f"game:{game}-v0-hard")
    for action in ["", "\\boxed{", "\\boxed{}", "}{", "\\boxed{\\boxed{", "x" * 1_000_000,
                   "\\boxed{" * 10_000 + "}" * 5_000, "\\boxed{" + "1 " * 150 + "}"]:
        env.reset(seed=1)
        observation, reward, terminated, truncated, info = env.step(action)
        assert reward == -0.1 and terminated and info["format_error"], (game, action[:30], observation)
        assert "\\boxed{" in observation  # the message says how to answer

"""Shared helpers for the game tests."""

from __future__ import annotations

import gem_core

GAMES = (
    "GuessTheNumber", "Mastermind", "Minesweeper", "Wordle", "Hangman", "FifteenPuzzle",
    "Sudoku", "TowerofHanoi", "Game2048", "Sokoban", "Crosswords", "WordSearch",
)

# Every game id the reference implementation (gem-llm 0.1.0) registers.
REFERENCE_IDS = tuple(
    f"game:{game}-v0-{variant}"
    for game in GAMES
    for variant in ("easy", "hard", "random") + (("extreme-hard",) if game == "Game2048" else ())
)
ALL_IDS = REFERENCE_IDS + tuple(f"game:{game}-v0" for game in GAMES)

FORMAT_ERROR = -0.1


def boxed(text: str) -> str:
    return f"I think it over.\n\\boxed{{{text}}}"


def play(env, moves: list[str]):
    """Step through ``moves`` (box contents); return the list of step results."""
    return [env.step(boxed(move)) for move in moves]


def make(env_id: str, seed: int = 0, **kwargs):
    env = gem_core.make(env_id, **kwargs)
    env.reset(seed=seed)
    return env


def check_transition(result, info_keys=("turn", "suffix")) -> None:
    """A step result obeys the games' documented contract."""
    observation, reward, terminated, truncated, info = result
    assert isinstance(observation, str) and observation
    assert isinstance(reward, float) or isinstance(reward, int)
    assert isinstance(terminated, bool) and isinstance(truncated, bool)
    assert not (terminated and truncated)
    for key in info_keys:
        assert key in info
    assert isinstance(info["suffix"], str)
    if reward == FORMAT_ERROR:
        assert terminated and info.get("format_error") is True and info["success"] is False
    else:
        assert 0.0 <= reward <= 1.0 + 1e-9, reward
        assert "format_error" not in info
    if terminated or truncated:
        assert isinstance(info.get("success"), bool)
    if truncated:
        assert info["success"] is False

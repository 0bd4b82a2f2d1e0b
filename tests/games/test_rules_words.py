"""Rules and scripted play: Wordle, Hangman, Crosswords, WordSearch; the shipped word data."""

from __future__ import annotations

import gzip
from importlib import resources

import pytest

import gem_core
from gem_envs.game import words
from gem_envs.game.word_grid import EMPTY
from gem_envs.game.wordle import mark_guess
from tests.games.helpers import boxed, make, play

# -- Wordle ----------------------------------------------------------------------------------

def test_marks_match_each_secret_letter_once():
    assert mark_guess("APPLE", "PAPAL") == ["Y", "Y", "G", "X", "Y"]
    assert mark_guess("CRANE", "CRANE") == ["G"] * 5
    assert mark_guess("ABBEY", "BABES") == ["Y", "Y", "G", "G", "X"]
    assert mark_guess("TOT", "OTT") == ["Y", "Y", "G"]


@pytest.mark.parametrize("env_id", ["game:Wordle-v0-easy", "game:Wordle-v0-hard", "game:Wordle-v0-random"])
def test_wordle_green_rewards_add_up_to_one(env_id):
    env = gem_core.make(env_id)
    for seed in range(5):
        env.reset(seed=seed)
        secret = env.secret
        decoy = next(w for w in words.words_of_length(len(secret)) if w != secret and w[0] == secret[0])
        first = env.step(boxed(decoy.lower()))
        assert first[1] == pytest.approx(0.5 * sum(a == b for a, b in zip(decoy, secret)) / len(secret))
        last = env.step(boxed(" ".join(secret)))
        assert last[2] and last[4]["success"] and first[1] + last[1] == pytest.approx(1.0)


def test_wordle_invalid_guesses():
    env = make("game:Wordle-v0-hard", seed=3)
    assert env.step(boxed("CAT"))[4]["invalid_move"]
    assert env.step(boxed("QXZVK"))[4]["invalid_move"]  # not a word
    env.step(boxed("HOUSE"))
    assert env.step(boxed("house"))[4]["invalid_move"]  # repeated
    assert env.step(boxed("H0USE"))[1] == -0.1
    lenient = make("game:Wordle-v0-hard", seed=3, only_real_words=False)
    assert lenient.step(boxed("QXZVK"))[4].get("invalid_move") is None


# -- Hangman ---------------------------------------------------------------------------------

@pytest.mark.parametrize("env_id", ["game:Hangman-v0-easy", "game:Hangman-v0-hard", "game:Hangman-v0-random"])
def test_hangman_letters_or_the_word_earn_one_in_total(env_id):
    env = gem_core.make(env_id)
    for seed in range(4):
        env.reset(seed=seed)
        letters = list(dict.fromkeys(env.secret))
        results = play(env, letters)
        assert results[-1][2] and results[-1][4]["success"] and not any(r[2] for r in results[:-1])
        assert sum(r[1] for r in results) == pytest.approx(1.0)
        env.reset(seed=seed)
        results = play(env, [letters[0], env.secret.lower()])
        assert results[-1][2] and sum(r[1] for r in results) == pytest.approx(1.0)


def test_hangman_invalid_and_wrong_guesses():
    env = make("game:Hangman-v0-hard", seed=2)
    absent = next(c for c in "QZXJKVWYFB" if c not in env.secret)
    assert env.step(boxed(absent))[1] == 0.0
    assert env.step(boxed(absent.lower()))[4]["invalid_move"]
    assert env.step(boxed("AB"))[4]["invalid_move"]
    wrong = next(w for w in words.words_of_length(7) if w != env.secret)
    result = env.step(boxed(wrong))
    assert result[1] == 0.0 and not result[2] and "invalid_move" not in result[4]
    assert env.step(boxed("A B"))[1] == -0.1


# -- Crosswords --------------------------------------------------------------------------------

def runs(grid: list[list[str]]) -> list[str]:
    """Every maximal run of two or more letters, across and down."""
    found = []
    for lines in (grid, [list(col) for col in zip(*grid)]):
        for line in lines:
            found += [run for run in "".join(line).split(EMPTY) if len(run) > 1]
    return found


@pytest.mark.parametrize("env_id", ["game:Crosswords-v0-easy", "game:Crosswords-v0-hard",
                                    "game:Crosswords-v0-random", "game:Crosswords-v0"])
def test_crosswords_are_proper_and_filling_them_wins(env_id):
    env = gem_core.make(env_id)  # the -random variant crashes in the reference
    for seed in range(5):
        _, info = env.reset(seed=seed)
        placed = sorted(p.word for p in env.placements)
        assert len(placed) == env.num_words and sorted(runs(env.solution)) == placed
        for clue, direction, length in env.clues:
            assert f"{clue} ({direction}, {length} letters)" in info["suffix"]
        cells = {(r, c) for p in env.placements for r, c in p.cells()}
        results = play(env, [f"{r} {c} {env.solution[r][c].lower()}" for r, c in sorted(cells)])
        assert results[-1][2] and results[-1][4]["success"]
        assert sum(r[1] for r in results) == pytest.approx(1.0)


def test_crossword_moves():
    env = make("game:Crosswords-v0-easy", seed=1)
    black = next((r, c) for r, row in enumerate(env.board) for c, ch in enumerate(row) if ch == EMPTY)
    cell = next(iter(env.placements[0].cells()))
    wrong = "A" if env.solution[cell[0]][cell[1]] != "A" else "B"
    assert env.step(boxed(f"{black[0]} {black[1]} A"))[4]["invalid_move"]
    assert env.step(boxed("99 0 A"))[4]["invalid_move"]
    result = env.step(boxed(f"{cell[0]} {cell[1]} {wrong}"))
    assert result[1] == 0.0 and "invalid_move" not in result[4]
    assert env.step(boxed(f"{cell[0]} {cell[1]} {env.solution[cell[0]][cell[1]]}"))[1] > 0
    assert env.step(boxed(f"{cell[0]} {cell[1]} {env.solution[cell[0]][cell[1]]}"))[4]["invalid_move"]
    assert env.step(boxed("[0 0 A]"))[1] == -0.1


# -- WordSearch --------------------------------------------------------------------------------

@pytest.mark.parametrize("env_id", ["game:WordSearch-v0-easy", "game:WordSearch-v0-hard", "game:WordSearch-v0-random"])
def test_finding_every_word_wins(env_id):
    env = gem_core.make(env_id)
    for seed in range(4):
        env.reset(seed=seed)
        moves = []
        for p in env.placements:
            (r1, c1), (r2, c2) = p.cells()[0], p.cells()[-1]
            moves.append(f"{r1} {c1} {r2} {c2}")
        results = play(env, moves)
        assert results[-1][2] and results[-1][4]["success"]
        assert sum(r[1] for r in results) == pytest.approx(1.0)
        assert results[-1][4]["suffix"].count("[") >= max(len(p.word) for p in env.placements)


def test_a_found_word_pays_once():
    env = make("game:WordSearch-v0-easy", seed=5)
    p = env.placements[0]
    (r1, c1), (r2, c2) = p.cells()[0], p.cells()[-1]
    assert env.step(boxed(f"{r1} {c1} {r2} {c2}"))[1] == pytest.approx(0.2)
    assert env.step(boxed(f"{r2} {c2} {r1} {c1}"))[4]["invalid_move"]  # the reference paid again here
    assert env.step(boxed(f"{r1} {c1} {r2} {c2}"))[4]["invalid_move"]
    assert env.step(boxed("0 0 1 1"))[4]["invalid_move"]  # diagonal
    assert env.step(boxed("0 0 0 99"))[4]["invalid_move"]
    assert env.step(boxed("[0 0 0 2]"))[1] == -0.1


# -- data --------------------------------------------------------------------------------------

def test_shipped_word_data():
    basic, full = words.basic_words(), words.english_words()
    assert len(basic) > 2500 and len(full) > 130_000
    assert set(basic) <= set(full) and all(w.isascii() and w.isalpha() and w.islower() for w in full)
    assert all(3 <= len(w) <= 10 for w in full)
    for length in (3, 4, 5, 7):
        assert len(words.words_of_length(length)) > 100
    notice = resources.files("gem_envs.game.data").joinpath("NOTICE.txt").read_text()
    assert "Apache License 2.0" in notice and "reasoning-gym" in notice
    raw = resources.files("gem_envs.game.data").joinpath("english_words.txt.gz").read_bytes()
    assert gzip.decompress(raw).decode().split() == list(full)
    for hardcore in (False, True):
        clues = words.crossword_clues(hardcore)
        assert len(clues) >= 60
        assert all(c.word.lower() not in c.clue.lower() for c in clues)


def test_word_search_grid_grows_with_many_short_words():
    env = make("game:WordSearch-v0", seed=3, num_words=20)
    assert len(env.placements) == 20 and len(env.hidden) == 20
    with pytest.raises(gem_core.GemError, match="num_words"):
        gem_core.make("game:WordSearch-v0", num_words=21)

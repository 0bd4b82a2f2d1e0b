"""Registers the ``game`` pack: twelve language games, each with a bare default id (the class
defaults) and the ``-easy``/``-hard``/``-random`` variants (see docs/envs.md)."""

from gem_core import hookimpl

_PACK = "gem_envs.game"


@hookimpl
def gem_register_envs(register):
    def game(name, module, cls, summary, variants):
        entry_point = f"{_PACK}.{module}:{cls}"
        for suffix, note, kwargs in variants:
            register(f"game:{name}-v0{suffix}", entry_point, description=f"{summary} {note}", **kwargs)

    game("GuessTheNumber", "guess_the_number", "GuessTheNumberEnv", "Find a hidden integer from higher/lower hints.", [
        ("", "1-20, 20 turns.", {}),
        ("-easy", "1-10, 4 turns.", dict(min_number=1, max_number=10, max_turns=4)),
        ("-hard", "1-50, 7 turns.", dict(min_number=1, max_number=50, max_turns=7)),
        ("-random", "A random range per episode.", dict(min_number=None, max_number=None, max_turns=None)),
        ("-easy-sparse", "1-10, 4 turns; reward 1 for finding it, else 0.",
         dict(min_number=1, max_number=10, max_turns=4, sparse=True)),
        ("-long-sparse", "1-20, 10 turns; reward 1 for finding it, else 0.",
         dict(min_number=1, max_number=20, max_turns=10, sparse=True)),
    ])
    game("Mastermind", "mastermind", "MastermindEnv", "Deduce a secret code from black/white pegs.", [
        ("", "4 digits of 1-6, 20 turns.", {}),
        ("-easy", "2 digits of 1-6, 10 turns.", dict(code_length=2, num_numbers=6, max_turns=10, duplicate_numbers=False)),
        ("-hard", "4 digits of 1-8, 30 turns.", dict(code_length=4, num_numbers=8, max_turns=30, duplicate_numbers=False)),
        ("-random", "Code size drawn per episode.", dict(code_length=None, num_numbers=None, max_turns=None, duplicate_numbers=False)),
    ])
    game("Minesweeper", "minesweeper", "MinesweeperEnv", "Reveal every safe cell without hitting a mine.", [
        ("", "8x8, 10 mines, 20 turns.", {}),
        ("-easy", "5x5, 5 mines, 25 turns.", dict(rows=5, cols=5, num_mines=5, max_turns=25)),
        ("-hard", "8x8, 12 mines, 64 turns.", dict(rows=8, cols=8, num_mines=12, max_turns=64)),
        ("-random", "Board of side 5-8 drawn per episode.", dict(rows=None, cols=None, num_mines=None, max_turns=None)),
    ])
    game("Wordle", "wordle", "WordleEnv", "Find a secret word from green/yellow/grey letter marks.", [
        ("", "5 letters, 20 turns.", {}),
        ("-easy", "3 letters, 15 turns.", dict(word_length=3, only_real_words=True, max_turns=15)),
        ("-hard", "5 letters, 25 turns.", dict(word_length=5, only_real_words=True, max_turns=25)),
        ("-random", "3-5 letters drawn per episode.", dict(word_length=None, only_real_words=True, max_turns=None)),
    ])
    game("Hangman", "hangman", "HangmanEnv", "Find a hidden word by guessing letters or the word.", [
        ("", "5 letters, 20 turns.", {}),
        ("-easy", "3 letters, 10 turns.", dict(word_length=3, hardcore=False, max_turns=10)),
        ("-hard", "7 letters, 20 turns.", dict(word_length=7, hardcore=False, max_turns=20)),
        ("-random", "3, 5 or 7 letters drawn per episode.", dict(word_length=None, hardcore=False, max_turns=None)),
    ])
    game("FifteenPuzzle", "fifteen_puzzle", "FifteenPuzzleEnv", "Slide numbered tiles into order.", [
        ("", "2x2, 20 turns.", {}),
        ("-easy", "2x2, 10 turns.", dict(num_rows=2, max_turns=10)),
        ("-hard", "4x4, 50 turns.", dict(num_rows=4, max_turns=50)),
        ("-random", "2x2, 3x3 or 4x4 drawn per episode.", dict(num_rows=None, max_turns=None)),
    ])
    game("Sudoku", "sudoku", "SudokuEnv", "Fill a Sudoku with a unique solution, one cell per turn.", [
        ("", "9x9, up to 30 empty cells, 100 turns.", {}),
        ("-easy", "4x4, up to 10 empty cells, 15 turns.", dict(clues=10, max_turns=15, scale=4)),
        ("-hard", "9x9, up to 50 empty cells, 50 turns.", dict(clues=50, max_turns=50, scale=9)),
        ("-random", "4x4 or 9x9 drawn per episode.", dict(clues=None, max_turns=None, scale=None)),
    ])
    game("TowerofHanoi", "tower_of_hanoi", "TowerofHanoiEnv", "Move a stack of disks from tower A to C.", [
        ("", "3 disks, 100 turns.", {}),
        ("-easy", "3 disks, 10 turns.", dict(num_disks=3, max_turns=10)),
        ("-hard", "5 disks, 35 turns.", dict(num_disks=5, max_turns=35)),
        ("-random", "3-5 disks drawn per episode.", dict(num_disks=None, max_turns=None)),
    ])
    game("Game2048", "game_2048", "Game2048Env", "Slide and merge tiles to reach a target tile.", [
        ("", "Target 2048, 1000 turns.", {}),
        ("-easy", "Target 64, 50 turns.", dict(target_tile=64, max_turns=50)),
        ("-hard", "Target 512, 50 turns.", dict(target_tile=512, max_turns=50)),
        ("-extreme-hard", "Target 2048, 100 turns.", dict(target_tile=2048, max_turns=100)),
        ("-random", "Target 16-64 drawn per episode.", dict(target_tile=None, max_turns=None)),
    ])
    game("Sokoban", "sokoban", "SokobanEnv", "Push every box onto a target (levels solvable in the turn limit).", [
        ("", "6x6, 3 boxes, 100 turns.", {}),
        ("-easy", "6x6, 2 boxes, 20 turns.", dict(dim_room=(6, 6), num_boxes=2, max_turns=20)),
        ("-hard", "8x8, 4 boxes, 50 turns.", dict(dim_room=(8, 8), num_boxes=4, max_turns=50)),
        ("-random", "Room and boxes drawn per episode.", dict(dim_room=None, num_boxes=None, max_turns=None)),
    ])
    game("Crosswords", "crosswords", "CrosswordsEnv", "Fill a small crossword from clues, a letter per turn.", [
        ("", "5 everyday words, 100 turns.", {}),
        ("-easy", "3 everyday words, 30 turns.", dict(hardcore=False, max_turns=30, num_words=3)),
        ("-hard", "3 rare words, 40 turns.", dict(hardcore=True, max_turns=40, num_words=3)),
        ("-random", "3 words, 20 turns, word set drawn per episode.", dict(hardcore=None, max_turns=None, num_words=None)),
    ])
    game("WordSearch", "word_search", "WordSearchEnv", "Find hidden words in a grid of letters.", [
        ("", "5 everyday words, 20 turns.", {}),
        ("-easy", "5 everyday words, 20 turns.", dict(num_words=5, max_turns=20, hardcore=False)),
        ("-hard", "5 dictionary words, 20 turns.", dict(num_words=5, max_turns=20, hardcore=True)),
        ("-random", "5 words, 20 turns, word set drawn per episode.", dict(num_words=None, max_turns=None, hardcore=None)),
    ])


@hookimpl
def gem_register_keys(register):
    register("crossword-clues", "gem_envs.game:data/crossword_clues.jsonl",
             description="Crosswords' clues with their words.")

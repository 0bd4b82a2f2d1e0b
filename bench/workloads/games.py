"""Workload: the twelve language games played with random actions, resets included.

Run as ``python bench/workloads/games.py --impl ours|reference [--quick]`` with the interpreter
of the implementation under test. For each game (the ``-easy`` variants; without --quick also
``-hard``) it plays random well-formed actions, resetting whenever an episode ends, and reports
env steps per second: steps, with their resets and action sampling, per second of CPU time
(process time, so that other work on a shared machine does not count), the best of five
slices of the budget, after one untimed warm-up episode. It also reports the mean reset time of Sudoku-hard and Sokoban-easy (and
Sokoban-hard without --quick, where the reference takes seconds per reset).

Actions come from each environment's own ``sample_random_action``, except where the reference
has none or a malformed one (Sudoku, TowerofHanoi, FifteenPuzzle, Crosswords, WordSearch): there
the reference is driven by generators written below, which draw actions from the same
distributions as ours. The reference's word games read NLTK's ``words`` corpus, which cannot be
downloaded here; in reference mode a stand-in corpus is written to a temporary folder: ``en``
is our full word list (133k words; the real one has 236k, so the reference reads less than it
would) and ``en-basic`` is 850 words of our basic list (the real list's size). Games the
reference cannot run (its Crosswords needs pandas, which it does not declare) are reported on
stderr and left out.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path

from _protocol import parser as workload_parser

GAMES = (
    "GuessTheNumber", "Mastermind", "Minesweeper", "Wordle", "Hangman", "FifteenPuzzle",
    "Sudoku", "TowerofHanoi", "Game2048", "Sokoban", "Crosswords", "WordSearch",
)
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
DATA = Path(__file__).resolve().parents[2] / "envs_plugins" / "game" / "data"


# -- actions for the reference where it has no well-formed sampler ------------------------------

def _sudoku(env, rng):
    n = env.scale
    empty = [(r, c) for r in range(n) for c in range(n) if env.board[r][c] == 0]
    r, c = rng.choice(empty) if empty else (rng.randrange(n), rng.randrange(n))
    return f"\\boxed{{{r + 1} {c + 1} {rng.randint(1, n)}}}"


def _hanoi(env, rng):
    source, target = rng.sample("ABC", 2)
    return f"\\boxed{{{source} {target}}}"


def _fifteen(env, rng):
    return f"\\boxed{{{rng.choice(('up', 'down', 'left', 'right'))}}}"


def _crosswords(env, rng):
    hidden = [(r, c) for r, row in enumerate(env.board) for c, ch in enumerate(row) if ch == "_"]
    r, c = rng.choice(hidden) if hidden else (0, 0)
    return f"\\boxed{{{r} {c} {rng.choice(LETTERS)}}}"


def _word_search(env, rng):
    size = len(env.game_board)
    r, c = rng.randrange(size), rng.randrange(size)
    if rng.random() < 0.5:
        return f"\\boxed{{{r} {c} {r} {rng.randrange(size)}}}"
    return f"\\boxed{{{r} {c} {rng.randrange(size)} {c}}}"


REFERENCE_ACTIONS = {
    "Sudoku": _sudoku, "TowerofHanoi": _hanoi, "FifteenPuzzle": _fifteen,
    "Crosswords": _crosswords, "WordSearch": _word_search,
}


# -- the two implementations ------------------------------------------------------------------------

def load(impl: str):
    """``make(env_id)`` and ``sampler(game) -> (env, rng) -> action`` for ``impl``."""
    if impl == "ours":
        import gem_core

        return gem_core.make, lambda game: (lambda env, rng: env.sample_random_action())
    _install_word_corpus()
    import gem

    def sampler(game):
        custom = REFERENCE_ACTIONS.get(game)
        return custom or (lambda env, rng: env.sample_random_action())

    return gem.make, sampler


def _install_word_corpus() -> None:
    """Point NLTK at a stand-in ``words`` corpus made from our lists (see the module docstring)."""
    import gzip

    import nltk

    root = Path(tempfile.mkdtemp(prefix="gem-bench-nltk-"))
    corpus = root / "corpora" / "words"
    corpus.mkdir(parents=True)
    basic = (DATA / "basic_words.txt").read_text().split()
    (corpus / "en").write_bytes(gzip.decompress((DATA / "english_words.txt.gz").read_bytes()))
    (corpus / "en-basic").write_text("\n".join(basic[:: max(1, len(basic) // 850)][:850]) + "\n")
    nltk.data.path.insert(0, str(root))
    nltk.download = lambda *args, **kwargs: True


# -- measurements -----------------------------------------------------------------------------------

def steps_per_second(make, sample, env_id: str, seconds: float, seed: int = 0, chunks: int = 5) -> float:
    """Random play for ``seconds`` of CPU time: steps (with their resets and action sampling)
    per CPU second, the best of ``chunks`` equal slices (the least disturbed by other work)."""
    env = make(env_id)
    rng = random.Random(seed)
    env.reset(seed=seed)
    for _ in range(1000):  # an untimed warm-up episode: one-time loading is not a step's cost
        _, _, terminated, truncated, _ = env.step(sample(env, rng))
        if terminated or truncated:
            break
    env.reset()
    clock = time.process_time
    best = 0.0
    for _ in range(chunks):
        start = clock()
        steps = 0
        while True:
            for _ in range(16):
                _, _, terminated, truncated, _ = env.step(sample(env, rng))
                if terminated or truncated:
                    env.reset()
            steps += 16
            elapsed = clock() - start
            if elapsed >= seconds / chunks:
                best = max(best, steps / elapsed)
                break
    return best


def reset_ms(make, env_id: str, max_resets: int, seconds: float, seed: int = 0) -> float:
    """Mean CPU milliseconds of ``reset(seed)`` over up to ``max_resets`` seeds."""
    env = make(env_id)
    clock = time.process_time
    start = clock()
    for k in range(max_resets):
        env.reset(seed=seed + k)
        if k >= 2 and clock() - start >= seconds:
            break
    return 1000 * (clock() - start) / (k + 1)


def main() -> None:
    parser = workload_parser(__doc__, "the -easy variants only, short budgets")
    parser.add_argument("--seconds", type=float, default=None, help="CPU seconds per id (default 0.3 with --quick, else 1.5)")
    parser.add_argument("--only", nargs="+", choices=GAMES, metavar="GAME", help="measure only these games")
    args = parser.parse_args()
    games = args.only or GAMES
    seconds = args.seconds or (0.3 if args.quick else 1.5)
    make, sampler = load(args.impl)

    from rich.progress import Progress

    variants = ("easy",) if args.quick else ("easy", "hard")
    resets = [("Sudoku", "hard"), ("Sokoban", "easy")] + ([] if args.quick else [("Sokoban", "hard")])
    resets = [(game, variant) for game, variant in resets if game in games]
    metrics = {}
    with Progress(transient=True, console=_stderr_console()) as progress:
        task = progress.add_task(f"games ({args.impl})", total=len(games) * len(variants) + len(resets))
        for game in games:
            for variant in variants:
                progress.update(task, description=f"{game}-{variant} ({args.impl})")
                rate = _measure(args.impl, f"{game}-{variant}", steps_per_second,
                                make, sampler(game), f"game:{game}-v0-{variant}", seconds)
                if rate is not None:
                    metrics[f"{game}-{variant}_steps_per_s"] = {"value": rate, "unit": "steps/s", "better": "higher"}
                progress.advance(task)
        for game, variant in resets:
            progress.update(task, description=f"{game}-{variant} resets ({args.impl})")
            value = _measure(args.impl, f"{game}-{variant} resets", reset_ms,
                             make, f"game:{game}-v0-{variant}", 10 if args.quick else 30, 4 * seconds)
            if value is not None:
                metrics[f"{game}-{variant}_reset_ms"] = {"value": value, "unit": "ms", "better": "lower"}
            progress.advance(task)
    print(json.dumps({"metrics": metrics}))


def _measure(impl: str, name: str, function, *args):
    """``function(*args)``; a failure of the reference is reported on stderr and skipped (it
    has games that crash or need packages it does not declare), one of ours is raised."""
    try:
        return function(*args)
    except Exception as e:
        if impl == "ours":
            raise
        print(f"reference {name} failed, not measured: {type(e).__name__}: {e}", file=sys.stderr)
        return None


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


if __name__ == "__main__":
    main()

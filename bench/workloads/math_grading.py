"""Workload: episodes per second of the math environment (reset + one graded step).

Both implementations read the same local problems (the math fixtures under tests/fixtures/math)
into their own math environment and answer the same scripted responses, each a few lines of
reasoning ending in an answer: half correct (in ``\\boxed{}``, as written in the data), three
eighths wrong (another problem's answer), one eighth without ``\\boxed{}``. The response of an
episode depends only on its number and on the problem the environment shows (both serve the
problems without shuffling; the reference reshuffles after each pass).

Run as ``python bench/workloads/math_grading.py --impl ours|reference [--quick]`` with the interpreter of
the implementation under test; the last stdout line is ``{"metrics": {...}}`` and stderr gets the
mean reward (a check that both grade alike). The reference's math environment imports
``datasets`` and ``pylatexenc``, which gem-llm 0.1.0 does not install; without them the reference
run exits with status 3 and says so.
"""

import importlib.util
import json
import sys
import time
from pathlib import Path

from _protocol import no_counterpart, parser as workload_parser

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "math"
REASONING = (
    "Let me work through this carefully. First I restate what is given and what is asked. "
    "Then I set up the relevant relation, simplify it step by step, and check the result by "
    "substituting it back into the original conditions. Everything is consistent, so "
)


def load_rows() -> list[dict[str, str]]:
    rows = []
    for path in sorted(FIXTURES.glob("*/data/*.jsonl")):
        with path.open() as f:
            rows.extend(json.loads(line) for line in f if line.strip())
    return rows


def respond(episode: int, gold: str, wrong: dict[str, str]) -> str:
    """The scripted response of an episode: correct, wrong or unboxed by ``episode % 8``."""
    kind = episode % 8
    if kind < 4:
        return f"{REASONING}the answer is \\boxed{{{gold}}}."
    if kind < 7:
        return f"{REASONING}the answer is \\boxed{{{wrong[gold]}}}."
    return f"{REASONING}the answer is {gold}."


def wrong_answers(rows: list[dict[str, str]]) -> dict[str, str]:
    """For each gold answer, a different answer from the data (the next one in sorted order)."""
    golds = sorted({row["answer"] for row in rows})
    return {gold: golds[(i + 1) % len(golds)] for i, gold in enumerate(golds)}


def make_env(impl: str, rows: list[dict[str, str]]):
    if impl == "ours":
        import gem_core

        return gem_core.make("math:Math12K", dataset=rows, shuffle=False)
    missing = [m for m in ("datasets", "pylatexenc") if importlib.util.find_spec(m) is None]
    if missing:  # gem-llm 0.1.0 does not install what its math environment imports
        no_counterpart(f"The reference math environment imports {' and '.join(missing)}, which this "
                       f"interpreter lacks: {sys.executable} -m pip install {' '.join(missing)}")
    from datasets import Dataset
    import gem
    import pyarrow

    # An explicit fingerprint skips hashing the table, which fails in some installs.
    dataset = Dataset(pyarrow.Table.from_pylist(rows), fingerprint="bench-math-rows")
    return gem.make("math:Math12K", dataset=dataset, eval=True)  # eval: in order


def run(env, impl: str, episodes: int, wrong: dict[str, str]) -> tuple[float, float]:
    """Seconds taken by ``episodes`` episodes, and the total reward."""
    total = 0.0
    start = time.perf_counter()
    for episode in range(episodes):
        env.reset()
        gold = env.answers[0] if impl == "ours" else env.answer
        total += float(env.step(respond(episode, gold, wrong))[1])
    return time.perf_counter() - start, total


def main() -> None:
    parser = workload_parser(__doc__, "fewer episodes")
    parser.add_argument("--episodes", type=int, default=None, help="episodes to time (default 2000, 400 with --quick)")
    args = parser.parse_args()
    episodes = args.episodes or (400 if args.quick else 2000)
    rows = load_rows()
    env = make_env(args.impl, rows)
    wrong = wrong_answers(rows)
    run(env, args.impl, 2 * len(rows), wrong)  # warm up: start workers, fill caches
    seconds, total = run(env, args.impl, episodes, wrong)
    env.close()
    print(f"{args.impl}: {episodes} episodes in {seconds:.2f} s, mean reward {total / episodes:.3f}",
          file=sys.stderr)
    print(json.dumps({"metrics": {
        "episodes_per_s": {"value": episodes / seconds, "unit": "episodes/s", "better": "higher"},
    }}))


if __name__ == "__main__":
    main()

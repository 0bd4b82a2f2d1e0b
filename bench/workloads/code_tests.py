"""Workload: code episodes per second (reset, then a step whose program runs against its tests).

The same problems, in the CodeContests format (stdin/stdout tests, two per problem), go to both
implementations, each answered with a correct program, so every test runs; both must reward
every episode with 1. Ours runs all tests of a submission in one sandboxed process; the
reference starts an unsandboxed interpreter per test. The interpreter's folder is put first on
PATH, as in an activated virtual environment, because the reference runs ``python`` from PATH.

Two metrics: one environment stepped in a loop, and 8 environments stepped at once from 8
threads (as a trainer's vector environment does), each thread with its own environment. Each is
timed over 200 episodes by default (50 per thread), long enough for the rate to settle.

Run as ``python bench/workloads/code_tests.py --impl ours|reference [--quick]``; the last line of
output is the JSON of the metrics. The reference needs ``datasets`` in its environment.
"""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from _protocol import parser as workload_parser

CONCURRENT = 8

# (statement, [(input, output), (input, output)], correct program)
PROBLEMS = [
    ("Print a + b.", [("1 2\n", "3\n"), ("-7 9\n", "2\n")],
     "a, b = map(int, input().split())\nprint(a + b)"),
    ("Print the words in reverse order.", [("a b c\n", "c b a\n"), ("one\n", "one\n")],
     "print(' '.join(reversed(input().split())))"),
    ("Print n factorial.", [("5\n", "120\n"), ("10\n", "3628800\n")],
     "import math\nprint(math.factorial(int(input())))"),
    ("Print YES if the line is a palindrome, else NO.", [("abba\n", "YES\n"), ("abc\n", "NO\n")],
     "s = input().strip()\nprint('YES' if s == s[::-1] else 'NO')"),
    ("Print the sum of n numbers.", [("3\n1 2 3\n", "6\n"), ("1\n-4\n", "-4\n")],
     "input()\nprint(sum(map(int, input().split())))"),
    ("Print the line in upper case.", [("gem\n", "GEM\n"), ("Code\n", "CODE\n")],
     "print(input().upper())"),
    ("Print the largest of n numbers.", [("4\n3 9 2 7\n", "9\n"), ("2\n-1 -5\n", "-1\n")],
     "input()\nprint(max(map(int, input().split())))"),
    ("Print the number of vowels.", [("education\n", "5\n"), ("rhythm\n", "0\n")],
     "print(sum(c in 'aeiou' for c in input()))"),
]


def rows() -> list[dict]:
    return [{"problem": statement,
             "tests": json.dumps({"inputs": [i for i, _ in tests], "outputs": [o for _, o in tests]})}
            for statement, tests, _ in PROBLEMS]


def action_for(problem_text: str) -> str:
    program = next(p for statement, _, p in PROBLEMS if problem_text.startswith(statement))
    return f"```python\n{program}\n```"


def make_env(impl: str):
    if impl == "ours":
        import gem_core

        return gem_core.make("code:CodeContest", dataset=rows())
    try:
        from datasets import Dataset
    except ImportError as e:
        sys.exit(f"The reference's code environment imports `datasets` ({e}): "
                 f"{sys.executable} -m pip install datasets")
    from gem.envs.code_env import CodeEnv

    return CodeEnv(dataset_name="codecontest-bench", dataset=Dataset.from_list(rows()))


def run(env, episodes: int) -> float:
    """Episodes per second; every episode must be rewarded 1."""
    start = time.perf_counter()
    for _ in range(episodes):
        observation, _ = env.reset()
        reward = env.step(action_for(observation))[1]
        if reward != 1.0:
            raise SystemExit(f"A correct program got reward {reward}: the benchmark is not measuring tests that pass.")
    return episodes / (time.perf_counter() - start)


def run_concurrently(impl: str, threads: int, episodes_each: int) -> float:
    """Episodes per second over ``threads`` threads, each stepping its own environment."""
    envs = [make_env(impl) for _ in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        for done in [pool.submit(run, env, 2) for env in envs]:  # warm up, at once (ours: a sandbox each)
            done.result()
        start = time.perf_counter()
        for done in [pool.submit(run, env, episodes_each) for env in envs]:
            done.result()  # a wrong reward in a thread fails the run
    return threads * episodes_each / (time.perf_counter() - start)


def main() -> None:
    parser = workload_parser(__doc__, "fewer episodes")
    parser.add_argument("--episodes", type=int, default=None, help="episodes to time (default 200, quick 16); a quarter of them per thread with 8 threads")
    args = parser.parse_args()
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    episodes = args.episodes or (16 if args.quick else 200)
    env = make_env(args.impl)
    run(env, 2)  # warm up: imports, caches
    rate = run(env, episodes)
    concurrent = run_concurrently(args.impl, CONCURRENT, max(2, episodes // 4))
    print(json.dumps({"metrics": {
        "code_episodes_per_s": {"value": rate, "unit": "episodes/s", "better": "higher"},
        "code_episodes_per_s_8_threads": {"value": concurrent, "unit": "episodes/s", "better": "higher"},
    }}))


if __name__ == "__main__":
    main()

"""Fixtures for the code tests: dataset folders laid out like their Hub repositories, and
reference solutions to the fixture problems."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Set before `datasets` is first imported: tests never touch the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# env id -> fixture folder, and the correct program for each of its problems, in row order.
DATASET_FIXTURES = {
    "code:CodeContest": "CodeContest",
    "eval:CodeContest": "CodeContest",
    "code:Taco8k": "TACO-8k",
    "code:PrimeIntellect15k": "PrimeIntellect-15k",
}
SOLUTIONS = {
    "code:CodeContest": [
        "a, b = map(int, input().split())\nprint(a + b)",
        "print(' '.join(reversed(input().split())))",
        "n = int(input())\nsieve = bytearray([1]) * (n + 1)\nsieve[:2] = b'\\0\\0'[: n + 1]\n"
        "for i in range(2, int(n ** 0.5) + 1):\n    if sieve[i]:\n"
        "        sieve[i * i :: i] = bytearray(len(sieve[i * i :: i]))\nprint(sum(sieve))",
        "input()\nbest = cur = None\nfor x in map(int, input().split()):\n"
        "    cur = x if cur is None or cur < 0 else cur + x\n    best = cur if best is None else max(best, cur)\n"
        "print(best)",
    ],
    "eval:CodeContest": [
        "s = input().strip()\nprint('YES' if s == s[::-1] else 'NO')",
        "n = int(input())\na, b = 0, 1\nfor _ in range(n):\n    a, b = b, (a + b) % 1000000007\nprint(a)",
    ],
    "code:Taco8k": [
        "print(*sorted(map(int, input().split())))",
        "def add(a, b):\n    return a + b",
        "class Solution:\n    def isAnagram(self, s: str, t: str) -> bool:\n        return sorted(s) == sorted(t)",
    ],
    "code:PrimeIntellect15k": [
        "import sys\nlines = sys.stdin.read().split('\\n')\n"
        "for line in lines[1 : 1 + int(lines[0])]:\n    a, b = map(int, line.split())\n    print(a * b)",
        "print(input().upper())",
    ],
}


def fenced(program: str, language: str = "python") -> str:
    return f"Here is my solution.\n\n```{language}\n{program}\n```\n"


@pytest.fixture(autouse=True)
def _offline_hub(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")

"""Finding the program: the last fenced Python or untagged code block."""

from __future__ import annotations

import pytest

from gem_envs.code.extraction import last_code_block


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("```python\nprint(1)\n```", "print(1)"),
        ("```\nprint(1)\n```", "print(1)"),  # untagged
        ("```py\nx\n```", "x"),
        ("```Python3 title=main.py\nx\n```", "x"),  # tag in any case, with attributes
        ("```python\nfirst\n```\ntext\n```python\nsecond\n```", "second"),  # the last block
        ("```python\nprog\n```\nOutput:\n```text\n3\n```", "prog"),  # other languages are skipped
        ("```python\nprog\n```\n```bash\npython prog.py\n```", "prog"),
        ("```cpp\nint main(){}\n```", None),
        ("```python\nunclosed", None),  # a block cut off by the token limit
        ("```python\n```", None),  # empty
        ("no code at all", None),
        ("inline ```code``` only", None),
        ("````python\nx = '```'\n````", "x = '```'"),  # a longer fence contains a shorter one
        ("```python\n    return x + 1\n```", "    return x + 1"),  # a body keeps its indentation
        ("1. step\n   ```python\n   def f():\n       return 1\n   ```", "def f():\n    return 1"),  # in a list item
        ("```python\n\n\nx = 1\n\n```", "x = 1"),  # blank lines around
        ("```python\r\nx = 1\r\n```", "x = 1"),  # Windows line endings
    ],
)
def test_last_code_block(text, expected):
    assert last_code_block(text) == expected


def test_garbage_and_huge_input():
    assert last_code_block(None) is None  # type: ignore[arg-type]
    assert last_code_block("```\n" * 100_000) is None  # 50,000 empty blocks
    big = "```python\n" + "x = 1\n" * 200_000 + "```"
    assert last_code_block(big).count("\n") == 199_999

"""Finding the program in what an LLM wrote: the last fenced code block."""

from __future__ import annotations

import re

PYTHON_TAGS = frozenset({"", "python", "python3", "py", "py3"})

_OPENING = re.compile(r"^( {0,3})(`{3,})([^`]*)$")


def last_code_block(text: str) -> str | None:
    """The content of the last complete fenced code block that is Python or untagged.

    Fences follow Markdown: a line of three or more backticks, with an optional language tag,
    opens a block; a line of at least as many backticks closes it. Blocks tagged with another
    language (```text, ```bash, ```cpp) are skipped, so that example output after the program
    is not taken for it. The fence's own indentation is removed from the content (a block inside a
    list item); deeper indentation is kept, so a function body written as the continuation of a
    prompt stays a body. Leading and trailing blank lines are dropped. Returns None when there is
    no such block. Linear in the length of ``text``.
    """
    if not isinstance(text, str) or "```" not in text:
        return None
    found: str | None = None
    fence = indent = ""
    tag: str | None = None  # None: outside any block
    lines: list[str] = []
    for line in text.splitlines():
        if tag is None:
            match = _OPENING.match(line)
            if match:
                indent, fence = match.group(1), match.group(2)
                tag = match.group(3).strip().split(" ")[0].lower()
                lines = []
            continue
        stripped = line.strip()
        if stripped.startswith(fence) and not stripped.strip("`"):
            if tag in PYTHON_TAGS:
                found = "\n".join(lines)
            tag = None
            continue
        lines.append(line[len(indent):] if line.startswith(indent) else line.lstrip(" "))
    if found is None:
        return None
    return found.strip("\n").rstrip() or None

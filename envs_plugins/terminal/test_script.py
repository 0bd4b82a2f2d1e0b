"""Test scripts run offline: terminal-bench's ``run-tests.sh`` and Harbor's ``tests/test.sh``.

Their standard boilerplate fetches the test tools when it runs: ``apt-get install curl``, uv's
installer, then pytest through uv (``uv init; uv add pytest==8.4.1; uv run pytest ...`` in
terminal-bench 1, ``uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 pytest ...`` in
Terminal-Bench 2), or through pip. GEM supplies those tools instead
(:mod:`gem_envs.terminal.pytest_kit`), so :func:`offline_script` turns the lines that only fetch
them into no-ops, and runs pytest, however the script asks for it (``uvx ... pytest``, ``uv run
pytest``, ``python3 -m pytest``), as the kit's ``pytest`` with the rest of its line unchanged: a
launcher that no file in the working directory or in ``HOME`` can shadow (``python3 -m`` would
import the working directory's ``pytest.py`` first). Everything else in the script (its own reward
file included) runs as written. The tools it
supplies are pytest (pinned or not) and any requirement pinned to one version (``name==1.2``).
A line that needs anything else from the network is reported, naming it.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement

NEEDS_NETWORK = re.compile(  # commands that fetch something (in a test script or a Dockerfile's RUN)
    r"\b(apt-get|apt|apk|yum|dnf|pip3?|uv|uvx|npm|npx|yarn|conda|cargo|gem|curl|wget|git\s+clone|go\s+(get|install))\b")
_FETCHES_RUNNER = [re.compile(p) for p in (  # lines that only fetch the test runner
    r"^(sudo\s+)?apt(-get)?\s+(-\S+\s+)*update(\s+-\S+)*$",
    r"^(sudo\s+)?apt(-get)?\s+(-\S+\s+)*install(\s+-\S+|\s+(curl|ca-certificates|tmux|asciinema))+$",
    r"^(curl|wget)\s.*astral\.sh/uv/.*\|\s*(ba)?sh$",
    r"^(source|\.)\s+\S*\.local/bin/env$",
    r"^uv\s+(init|venv)(\s+\S+)*$",
    r"^(source|\.)\s+\S*\.venv/bin/activate$",
)]
_INSTALL = re.compile(r"^(uv\s+add|uv\s+pip\s+install|pip3?\s+install|python3?\s+-m\s+pip\s+install)\s")
_RUNNER = re.compile(r"^(uvx|uv\s+(tool\s+)?run)\s")
_PYTEST = re.compile(r"(^|[\s;&|(])(python3?\s+-m\s+)?pytest(\s|$)")
_PYTHON_M_PYTEST = re.compile(r"(^|[\s;&|(])python3?\s+-m\s+pytest(?=\s|$)")
_VALUED = {"-p": "python", "--python": "python", "-w": "with", "--with": "with", "--from": "from",
           "--with-requirements": "requirements", "--index-url": "index", "--extra-index-url": "index"}
SUPPLIED = "GEM supplies the test tools"


@dataclass(frozen=True)
class OfflineScript:
    """A test script as it runs offline, and what it needs."""

    text: str  # the script, the fetching lines made no-ops; line numbers are kept
    tools: tuple[str, ...] = ()  # requirements of the test tools GEM supplies (none when it runs no pytest)
    python: str = ""  # the Python version its runner asked for (`uvx -p 3.13`), "" if none
    network: str = ""  # why it still needs the network (the first such line), "" when it does not


def offline_script(text: str, name: str = "run-tests.sh") -> OfflineScript:
    """``text`` as it runs offline (see the module)."""
    out: list[str] = []
    tools: list[str] = []
    python = needs = ""
    mentions_pytest = False
    for number, lines in _logical_lines(text.splitlines()):
        joined = "".join(line[:-1] if i < len(lines) - 1 else line for i, line in enumerate(lines))
        code = joined.split(" #", 1)[0].strip() if not joined.lstrip().startswith("#") else ""
        mentions_pytest = mentions_pytest or bool(_PYTEST.search(code))
        replacement, missing = None, ""
        if code and all(any(p.match(part) for p in _FETCHES_RUNNER) or _INSTALL.match(part + " ")
                        for part in _alternatives(code)):
            wanted = [r for part in _alternatives(code) if _INSTALL.match(part + " ") for r in _requirements(part)]
            missing = _unsupplied(wanted)
            if not missing:
                tools.extend(wanted)
                replacement = f"true  # {' '.join(code.split())}  ({SUPPLIED})"
        elif code and _RUNNER.match(code):
            runner = _runner(joined.strip())
            if runner is not None:
                asked, wanted, args = runner
                missing = _unsupplied(wanted)
                if not missing:
                    tools.extend(wanted)
                    python = python or asked
                    mentions_pytest = True
                    indent = joined[:len(joined) - len(joined.lstrip())]
                    replacement = f"{indent}pytest{args}"
        if replacement is not None:
            out.extend([replacement] + [""] * (len(lines) - 1))
            continue
        out.extend(_PYTHON_M_PYTEST.sub(r"\1pytest", line) if code else line for line in lines)
        found = NEEDS_NETWORK.search(code) if code and not needs else None
        if missing or found:
            what = (f"`{missing}` from the package index (GEM supplies pytest and requirements pinned with ==)"
                    if missing else found.group(1))
            needs = needs or (f"its {name} runs `{' '.join(code.split())}` (line {number}), which needs {what} "
                              "and the network.")
    if (tools or mentions_pytest) and not any(Requirement(t).name == "pytest" for t in tools):
        tools.append("pytest")
    return OfflineScript("\n".join(out) + "\n", _merged(tools), python, needs)


def _merged(tools: list[str]) -> tuple[str, ...]:
    """One requirement per tool, in order of first mention: a pinned one over an unpinned one."""
    chosen: dict[str, str] = {}
    for tool in tools:
        name = Requirement(tool).name.lower()
        if name not in chosen or not Requirement(chosen[name]).specifier:
            chosen[name] = tool
    return tuple(chosen.values())


def _logical_lines(lines: list[str]) -> list[tuple[int, list[str]]]:
    """``(first line number, physical lines)`` of each command line, joining ``\\`` continuations."""
    result: list[tuple[int, list[str]]] = []
    current: list[str] = []
    for number, line in enumerate(lines, 1):
        current.append(line)
        if not (line.endswith("\\") and not line.lstrip().startswith("#")):
            result.append((number - len(current) + 1, current))
            current = []
    if current:
        result.append((len(lines) - len(current) + 1, current))
    return result


def _alternatives(code: str) -> list[str]:
    """The commands of ``a || b && c; d``, each without a trailing ``2>/dev/null``."""
    return [re.sub(r"\s+2?>\s*/dev/null$", "", part.strip()) for part in re.split(r"\|\||&&|;", code) if part.strip()]


def _words(code: str) -> list[str]:
    try:
        return shlex.split(code)
    except ValueError:
        return code.split()


def _requirements(install: str) -> list[str]:
    """The requirements an install line names (its options left out)."""
    words = _words(install)
    start = 4 if words[:3] == ["uv", "pip", "install"] or words[1:4] == ["-m", "pip", "install"] else 2
    return [w for w in words[start:] if not w.startswith("-")]


def _runner(code: str) -> tuple[str, list[str], str] | None:
    """``(Python version asked, requirements, pytest's arguments as written)`` of a ``uvx`` or
    ``uv run`` line that runs pytest; None for any other."""
    tokens = [(m.group(), m.end()) for m in re.finditer(r"\S+", code)]
    position = 2 if tokens[0][0] == "uv" and tokens[1][0] == "run" else 3 if tokens[0][0] == "uv" else 1
    python, wanted = "", []
    while position < len(tokens):
        word = tokens[position][0].strip("'\"")
        option, _, inline = word.partition("=")
        if option in _VALUED:
            value = inline or (tokens[position + 1][0].strip("'\"") if position + 1 < len(tokens) else "")
            position += 1 if inline else 2
            kind = _VALUED[option]
            if kind == "python":
                python = value
            elif kind in ("with", "from"):
                wanted.append(value)
            else:
                return None  # a requirements file or another index: not something GEM supplies
        elif word.startswith("-"):
            position += 1
        else:
            break
    else:
        return None
    command = tokens[position][0].strip("'\"")
    rest = code[tokens[position][1]:]
    if command in ("python", "python3") and rest.split()[:2] == ["-m", "pytest"]:
        rest = rest.split("pytest", 1)[1]
    elif command.startswith("pytest@"):
        wanted.append("pytest==" + command.split("@", 1)[1])
    elif command != "pytest":
        return None
    return python, wanted, rest


def _unsupplied(requirements: list[str]) -> str:
    """The first requirement GEM does not supply (not pytest, not pinned to one version), or ""."""
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            return text
        pins = [s for s in requirement.specifier if s.operator in ("==", "===") and "*" not in s.version]
        if requirement.name.lower() != "pytest" and not pins or requirement.url:
            return text
    return ""

"""Evaluate one page's examples in this interpreter, in order, in one namespace, as a reader who
copies them into one session would: ``python -m tests.docs.evaluate EXAMPLES.json``.

The file holds ``{"examples": [...]}``, each as :class:`tests.docs.examples.Example` (``asdict``). A
Python example runs (``check: run``) or is compiled and its imports resolved (``check: imports``).
A bash fence's ``gem`` command lines are parsed by the ``gem`` command's own Click parser (paths
need not exist: the reader's own runs make them); those that begin with the words of one of its
``run`` prefixes also run (exit status 0, in the working directory); its ``python -m MODULE``
lines resolve their module. It prints one line per example and stops at the first that fails,
with its traceback, exit status 1.

Only the standard library and the project are imported here (OpenEnv's environment has no pytest
or Sybil).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COMMAND_TIMEOUT = 300  # seconds for one gem line that runs
SEPARATORS = ";&|()"  # characters that end a simple command


class ExampleFailed(Exception):
    """An example did not hold; the message says where and why."""


def run_python(example: dict, namespace: dict) -> None:
    code = compile_example(example)
    if example["check"] == "run":
        exec(code, namespace)
    else:
        resolve_imports(example["source"], example["absent"], example["first_line"])


def compile_example(example: dict):
    padding = "\n" * (example["first_line"] - 1)  # tracebacks name the page's own lines
    return compile(padding + example["source"], str(REPO / example["page"]), "exec", dont_inherit=True)


def resolve_imports(source: str, absent: list[str], first_line: int) -> None:
    """Import each module the code imports and look up each name it imports from one (a lazy
    ``__getattr__`` included); modules under ``absent`` are left out, and must not be importable."""
    for module in absent:
        if importlib.util.find_spec(module) is not None:
            raise ExampleFailed(f"absent={module} but {module} is installed here: resolve its imports")
    for node in ast.walk(ast.parse(source)):
        line = first_line + getattr(node, "lineno", 1) - 1
        if isinstance(node, ast.Import):
            targets = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise ExampleFailed(f"line {line}: a relative import")
            targets = [(node.module, alias.name) for alias in node.names]
        else:
            continue
        for module, name in targets:
            if module.split(".")[0] in absent:
                continue
            try:
                imported = importlib.import_module(module)
                if name not in (None, "*") and not hasattr(imported, name):
                    importlib.import_module(f"{module}.{name}")
            except Exception as e:
                what = f"from {module} import {name}" if name else f"import {module}"
                raise ExampleFailed(f"line {line}: `{what}` fails: {type(e).__name__}: {e}") from e


def command_lines(source: str, first_line: int):
    """(line, words) of each simple command of a bash fence: continuation lines joined, comments
    dropped, split at ``;``, ``&&``, ``|`` ..., leading ``NAME=value`` words dropped."""
    pending, start = "", None
    for number, text in enumerate(source.splitlines(), first_line):
        start = number if start is None else start
        pending += text + "\n"
        if text.rstrip().endswith("\\"):
            continue
        try:
            lexer = shlex.shlex(pending.replace("\\\n", " "), posix=True, punctuation_chars=SEPARATORS)
            lexer.whitespace_split = True
            words = list(lexer)
        except ValueError:  # a quote that closes on a later line
            continue
        command: list[str] = []
        for word in [*words, ";"]:
            if word and set(word) <= set(SEPARATORS):
                while command and "=" in command[0] and command[0].split("=")[0].isidentifier():
                    command.pop(0)
                if command:
                    yield start, command
                command = []
            else:
                command.append(word)
        pending, start = "", None


def parse_gem(words: list[str]) -> None:
    """Parse ``gem ARGS`` with the gem command's Click parser, invoking nothing."""
    import click

    from gem_core.cli import cli

    command, name, args, parent = cli, "gem", words[1:], None
    while True:
        for parameter in command.params:  # the reader's runs make the paths a line names
            if isinstance(parameter.type, click.Path) and parameter.type.exists:
                parameter.type = click.Path(file_okay=parameter.type.file_okay, dir_okay=parameter.type.dir_okay)
        context = command.make_context(name, list(args), parent=parent)
        rest = [*getattr(context, "_protected_args", ()), *context.args]
        if not isinstance(command, click.Group) or not rest:
            return
        name, command, args = command.resolve_command(context, rest)
        parent = context


def run_commands(example: dict) -> list[str]:
    done, unmatched = [], set(example["run"])
    for line, words in command_lines(example["source"], example["first_line"]):
        text = shlex.join(words)
        try:
            if words[0] == "gem":
                parse_gem(words)
                prefixes = [p for p in example["run"] if words[:len(p.split())] == p.split()]
                unmatched -= set(prefixes)
                if prefixes:
                    run_gem(words)
                    done.append(f"ran `{text}`")
            elif words[0] in ("python", "python3") and words[1:2] == ["-m"] and len(words) > 2:
                if importlib.util.find_spec(words[2]) is None:
                    raise ExampleFailed(f"no module named {words[2]!r}")
            elif words[0] in ("python", "python3") and words[1:2] == ["-c"] and len(words) > 2:
                compile(words[2], f"<python -c at {example['page']}:{line}>", "exec", dont_inherit=True)
                resolve_imports(words[2], [], line)
        except ExampleFailed as e:
            raise ExampleFailed(f"line {line}: `{text}`: {e}") from None
        except Exception as e:
            message = e.format_message() if hasattr(e, "format_message") else f"{type(e).__name__}: {e}"
            raise ExampleFailed(f"line {line}: `{text}`: {message}") from e
    if unmatched:
        raise ExampleFailed(f"run={','.join(sorted(unmatched))}: no gem line of the fence starts so")
    return done


def run_gem(words: list[str]) -> None:
    try:
        done = subprocess.run([sys.executable, "-m", "gem_core.cli", *words[1:]], capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ExampleFailed(f"ran past {COMMAND_TIMEOUT} s") from None
    if done.returncode:
        raise ExampleFailed(f"exit status {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")


def page_traceback(error: BaseException) -> str:
    """The traceback of ``error`` from the example's own lines on (this module's frames left out)."""
    frames = traceback.extract_tb(error.__traceback__)
    while frames and frames[0].filename == __file__:
        frames.pop(0)
    return "".join(["Traceback (most recent call last):\n", *traceback.format_list(frames),
                    *traceback.format_exception_only(error)])


def main(argv: list[str]) -> int:
    examples = json.loads(Path(argv[0]).read_text())["examples"]
    namespace: dict = {"__name__": "__main__"}
    for example in examples:
        where, start = f"{example['page']}:{example['line']}", time.monotonic()
        try:
            if example["kind"] == "python":
                run_python(example, namespace)
                said = "ran" if example["check"] == "run" else "imports resolve"
            else:
                said = "".join(["gem lines parse", *(f"; {d}" for d in run_commands(example))])
            print(f"{where}: {said} ({time.monotonic() - start:.1f} s)", flush=True)
        except ExampleFailed as e:
            print(f"{where}: FAILED: {e}", flush=True)
            return 1
        except BaseException as e:
            print(f"{where}: FAILED:\n{page_traceback(e)}", flush=True)
            return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.exit(main(sys.argv[1:]))

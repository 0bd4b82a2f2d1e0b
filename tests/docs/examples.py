"""The examples of README.md and docs/**/*.md, found with Sybil's Markdown lexers, each with the test
stage that owns it and how far it is checked.

An example is a ```python fence, an ``invisible-code-block: python`` comment (setup or checks the
page does not show), or a ```bash fence (its ``gem`` command lines). Directives in HTML comments,
which the site does not show, say who owns an example and how it is checked (docs/tests.md,
"Documented examples"):

    <!-- examples: stage=trl,trl_oldest -->     every example of the page (default: core)
    <!-- example: stage=verl_cpu -->            the next example
    <!-- example: check=imports reason="needs a GPU" -->   parse it and resolve its imports, not run it
    <!-- example: run="gem envs, gem check" --> run the bash fence's gem lines that start so

A directive that names an unknown stage or key, a ``check`` other than run without a reason, or
that no example follows, is a :class:`DirectiveError`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from sybil import Document
from sybil.parsers.markdown.lexers import DirectiveInHTMLCommentLexer, FencedCodeBlockLexer

REPO = Path(__file__).resolve().parents[2]
#: The fence languages that hold examples, by kind; a fence in any other language (text, toml, ...)
#: is shown, not run.
KINDS = {"python": "python", "py": "python", "bash": "commands", "sh": "commands", "shell": "commands",
         "console": "commands"}
#: The fence languages that are shown only; a fence in a language of neither table is an error, so
#: that no example is left out by a spelling (```python3, ```pycon).
SHOWN = {"", "text", "toml", "yaml", "yml", "json", "jsonl", "ini", "markdown", "md", "jinja", "html", "diff", "csv"}
#: The test stages besides the adapter stages of scripts/adapter_envs.py: the core stage, and
#: OpenEnv's own environment (scripts/openenv_env.py), whose examples the core stage runs there.
CORE, OPENENV = "core", "openenv"
CHECKS = ("run", "imports")
KEYS = {"examples": {"stage"}, "example": {"stage", "check", "reason", "absent", "run"}}


class DirectiveError(ValueError):
    """A directive of a page that cannot be followed; the message names the page and line."""


@dataclass(frozen=True)
class Example:
    """One example: where it is, what it is, who owns it and how far it is checked."""

    page: str  # relative to the repository, e.g. "docs/tools.md"
    line: int  # of the fence (or comment) that opens it
    first_line: int  # of its source's first line in the page
    kind: str  # "python" or "commands"
    source: str
    stages: tuple[str, ...]
    check: str = "run"  # "run", or "imports": parsed and its imports resolved
    reason: str = ""  # why it is not run
    absent: tuple[str, ...] = ()  # top-level modules no test environment has, left unresolved
    run: tuple[str, ...] = ()  # the gem command lines of a bash fence that run, by prefix
    invisible: bool = False

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def doc_pages() -> list[Path]:
    """README.md and every page of the documentation site (docs/**/*.md)."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def known_stages() -> tuple[str, ...]:
    from tests.docs.stages import adapter_envs

    return (CORE, OPENENV, *adapter_envs().STAGES)


_FENCES = FencedCodeBlockLexer(language=r"[^\n]*", mapping={"language": "info", "source": "source"})
_INVISIBLE = DirectiveInHTMLCommentLexer(directive="invisible-code-block", arguments=r"\w+",
                                         mapping={"arguments": "info", "source": "source"})
_DIRECTIVES = DirectiveInHTMLCommentLexer(directive="examples?", arguments=r".*?")


def _parse(document: Document):
    """Sybil parser: the fences whose language holds examples, the invisible code blocks and the
    directives, leaving out comments shown inside a fence (as docs/tests.md shows directives)."""
    fences = list(_FENCES(document))
    for region in fences:
        info = region.lexemes["info"].split()
        language = info[0].lower() if info else ""
        kind = KINDS.get(language)
        if kind is None and language not in SHOWN:
            raise DirectiveError(f"{document.path}, {document.line_column(region.start)}: a ```{language} fence; "
                                 f"examples are in {', '.join(sorted(KINDS))}, and the fences only shown in "
                                 f"{', '.join(sorted(SHOWN - {''}))} (tests/docs/examples.py)")
        if kind is not None:
            region.parsed = (kind, region.lexemes["source"], False)
            yield region
    for region in [*_INVISIBLE(document), *_DIRECTIVES(document)]:
        if any(fence.start <= region.start < fence.end for fence in fences):
            continue
        if "directive" in region.lexemes:
            region.parsed = ("directive", region.lexemes["directive"], region.lexemes["arguments"] or "")
        else:
            kind = KINDS.get(region.lexemes["info"].lower())
            if kind is None:
                continue
            region.parsed = (kind, region.lexemes["source"], True)
        yield region


def _settings(page: str, line: int, name: str, arguments: str) -> dict[str, str]:
    where = f"{page}:{line}"
    try:
        words = shlex.split(arguments)
    except ValueError as e:
        raise DirectiveError(f"{where}: `{name}:` directive: {e}") from None
    settings = {}
    for word in words:
        key, equals, value = word.partition("=")
        if not equals or key not in KEYS[name]:
            raise DirectiveError(f"{where}: `{name}:` takes {', '.join(sorted(f'{k}=...' for k in KEYS[name]))}; "
                                 f"not {word!r}")
        settings[key] = value
    return settings


def _names(value: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in value.split(",") if name.strip())


@cache
def page_examples(page: str) -> tuple[Example, ...]:
    """The examples of ``page`` (relative to the repository), in order, with their owners."""
    path = REPO / page
    document = Document.parse(str(path), _parse)
    stages = known_stages()
    page_stages: tuple[str, ...] = (CORE,)
    pending: tuple[int, dict[str, str]] | None = None
    found: list[Example] = []
    for sybil_example in document.examples():
        kind, *rest = sybil_example.parsed
        line = sybil_example.line
        if kind == "directive":
            name, arguments = rest
            settings = _settings(page, line, name, arguments)
            unknown = [s for s in _names(settings.get("stage", "")) if s not in stages]
            if unknown:
                raise DirectiveError(f"{page}:{line}: unknown stage {unknown[0]!r}; "
                                     f"the stages are: {', '.join(stages)}")
            if name == "examples":
                if found or pending or page_stages != (CORE,):
                    raise DirectiveError(f"{page}:{line}: `examples:` comes once, before the page's first example")
                page_stages = _names(settings.get("stage", "")) or (CORE,)
            elif pending is not None:
                raise DirectiveError(f"{page}:{pending[0]}: an `example:` directive is followed by another, not by "
                                     "an example")
            else:
                pending = (line, settings)
            continue
        source, invisible = rest
        settings = {}
        if pending is not None:
            settings = pending[1]
            pending = None
        found.append(_example(page, sybil_example, kind, source, invisible, page_stages, settings))
    if pending is not None:
        raise DirectiveError(f"{page}:{pending[0]}: no example follows this `example:` directive")
    return tuple(found)


def _example(page: str, sybil_example, kind: str, source, invisible: bool, page_stages: tuple[str, ...],
             settings: dict[str, str]) -> Example:
    where = f"{page}:{sybil_example.line}"
    check = settings.get("check", "run")
    if check not in CHECKS:
        raise DirectiveError(f"{where}: check={check!r}; it is one of: {', '.join(CHECKS)}")
    if kind == "commands" and ("check" in settings or "absent" in settings):
        raise DirectiveError(f"{where}: a bash fence's gem lines are always parsed; run=... says which run")
    if kind == "python" and "run" in settings:
        raise DirectiveError(f"{where}: run=... is for the gem lines of a bash fence")
    if (check != "run") != bool(settings.get("reason")):
        raise DirectiveError(f"{where}: check={check} " + ("needs reason=\"why it cannot run\", which the page also "
                                                            "says" if check != "run" else "runs: a reason is for "
                                                            "check=imports"))
    if settings.get("absent") and check != "imports":
        raise DirectiveError(f"{where}: absent=... is for check=imports")
    run = _names(settings.get("run", ""))
    return Example(page=page, line=sybil_example.line, first_line=sybil_example.line + source.line_offset + 1,
                   kind=kind, source=str(source), stages=_names(settings.get("stage", "")) or page_stages,
                   check=check, reason=settings.get("reason", ""), absent=_names(settings.get("absent", "")),
                   run=run, invisible=invisible)


def all_examples() -> list[Example]:
    """Every example of every page of :func:`doc_pages`."""
    return [example for path in doc_pages() for example in page_examples(str(path.relative_to(REPO)))]


def owned_by(stage: str) -> dict[str, list[Example]]:
    """The examples ``stage`` owns, by page (pages without one left out)."""
    pages: dict[str, list[Example]] = {}
    for example in all_examples():
        if stage in example.stages:
            pages.setdefault(example.page, []).append(example)
    return pages


def python_sources(*pages: str) -> list[str]:
    """The source of every shown ```python fence of ``pages`` (of every page when none are named)."""
    names = pages or [str(path.relative_to(REPO)) for path in doc_pages()]
    return [e.source for page in names for e in page_examples(page) if e.kind == "python" and not e.invisible]


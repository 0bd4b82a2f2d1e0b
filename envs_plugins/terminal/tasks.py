"""Terminal tasks: loading terminal-bench and Harbor task folders.

A **terminal-bench** task folder holds ``task.yaml`` (``instruction``, ``difficulty``,
``category``, ``tags``, ``max_agent_timeout_sec``, ``max_test_timeout_sec``, optionally
``test_weights``), ``Dockerfile``, ``run-tests.sh``, ``tests/`` and ``solution.sh``. A
**Harbor** task folder holds ``task.toml``, ``instruction.md``, ``environment/Dockerfile``,
``tests/test.sh`` (which writes ``/logs/verifier/reward.txt``) and ``solution/solve.sh``.

Without Docker, the Dockerfile is read, not built: ``FROM`` must name a plain Debian, Ubuntu or
Python base; ``WORKDIR`` names the workspace; ``COPY``/``ADD`` of the task's own files place them
in it; ``ENV`` sets variables; ``RUN`` commands run in the sandbox before the agent starts, unless
they install packages or download something, which the sandbox cannot do: such a task raises
:class:`TaskUnsupportedError` naming what it needs.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
import warnings
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from gem_core.errors import GemError

BUILTIN_DIR = Path(__file__).parent / "tasks"
DIFFICULTIES = ("easy", "medium", "hard")
TERMINAL_BENCH, HARBOR = "terminal-bench", "harbor"
_BASE_IMAGES = re.compile(r"(^|[/_-])(debian|ubuntu|python|buildpack-deps)([:_-]|$)|t-bench/(ubuntu|python)")
_NEEDS = re.compile(
    r"\b(apt-get|apt|apk|yum|dnf|pip3?|uv|uvx|npm|npx|yarn|conda|cargo|gem|curl|wget|git\s+clone|go\s+(get|install))\b")
_HARNESS_TOOLS = {"tmux", "asciinema"}  # what terminal-bench's harness installs for itself
_SYSTEM_DIRS = ("/", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc", "/dev", "/tmp", "/tests", "/logs")


class TaskUnsupportedError(GemError):
    """A task needs more than the sandbox offers (a package, the network, a service, an image)."""


@dataclass(frozen=True)
class TerminalTask:
    """One task: what the agent is told, how its workspace is made, and how it is graded."""

    name: str
    root: Path
    layout: str
    instruction: str
    difficulty: str = "medium"
    category: str = ""
    tags: tuple[str, ...] = ()
    workdir: str = "/app"
    files: tuple[tuple[Path, str], ...] = ()  # (host path, path in the sandbox) copied in before setup
    setup: tuple[str, ...] = ()  # shell commands run in the workspace before the agent starts
    env: tuple[tuple[str, str], ...] = ()
    agent_timeout: float = 900.0
    test_timeout: float = 60.0
    test_weights: tuple[tuple[str, float], ...] = field(default=())

    @property
    def tests_dir(self) -> Path:
        return self.root / "tests"

    @property
    def test_command(self) -> str:
        """What grading runs, with the tests in ``/tests``."""
        return "bash /tests/run-tests.sh" if self.layout == TERMINAL_BENCH else "bash /tests/test.sh"

    @property
    def test_files(self) -> list[tuple[Path, str]]:
        """(host path, name under /tests) of everything grading copies in."""
        items = [(path, path.name) for path in sorted(self.tests_dir.iterdir())]
        if self.layout == TERMINAL_BENCH:
            items.append((self.root / "run-tests.sh", "run-tests.sh"))
        return items

    @property
    def solution(self) -> Path:
        return self.root / ("solution.sh" if self.layout == TERMINAL_BENCH else "solution/solve.sh")


def builtin_tasks(difficulty: str | None = None) -> list[TerminalTask]:
    """The tasks that ship with GEM, by name (optionally of one difficulty)."""
    return [t for t in _builtin() if difficulty is None or t.difficulty == difficulty]


@functools.lru_cache(maxsize=1)
def _builtin() -> tuple[TerminalTask, ...]:
    return tuple(load_tasks(BUILTIN_DIR))  # read once per process: tasks are immutable


def load_tasks(path: str | Path) -> list[TerminalTask]:
    """Every task under ``path``: a task folder itself, or a folder of task folders (sorted by
    name). Tasks that need more than the sandbox offers are skipped with a warning."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise GemError(f"No folder of terminal tasks at {str(root)!r}: pass path= a task folder "
                       "(terminal-bench: task.yaml; Harbor: task.toml) or a folder of them.")
    if _layout(root) is not None:
        return [load_task(root)]
    tasks, skipped = [], []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and _layout(p) is not None):
        try:
            tasks.append(load_task(folder))
        except TaskUnsupportedError as e:
            skipped.append(folder.name)
            warnings.warn(f"Skipping terminal task {folder.name!r}: {e}", stacklevel=2)
    if not tasks:
        raise GemError(f"No usable terminal task under {str(root)!r}" + (
            f" ({len(skipped)} skipped, see the warnings)." if skipped else
            ": a task folder holds task.yaml (terminal-bench) or task.toml (Harbor)."))
    return tasks


def load_task(folder: str | Path) -> TerminalTask:
    """The task in ``folder``; :class:`TaskUnsupportedError` if it needs more than the sandbox."""
    folder = Path(folder)
    layout = _layout(folder)
    if layout == TERMINAL_BENCH:
        return _terminal_bench(folder)
    if layout == HARBOR:
        return _harbor(folder)
    raise GemError(f"{str(folder)!r} is not a terminal task: it has neither task.yaml nor task.toml.")


def _layout(folder: Path) -> str | None:
    if (folder / "task.yaml").is_file():
        return TERMINAL_BENCH
    if (folder / "task.toml").is_file():
        return HARBOR
    return None


def _terminal_bench(folder: Path) -> TerminalTask:
    import yaml

    try:
        meta = yaml.load((folder / "task.yaml").read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        raise GemError(f"{folder / 'task.yaml'} is not valid YAML: {e}") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("instruction"), str):
        raise GemError(f"{folder / 'task.yaml'} needs an 'instruction' (a string).")
    _require(folder, "run-tests.sh", "tests")
    compose = folder / "docker-compose.yaml"
    if compose.is_file():
        services = (yaml.safe_load(compose.read_text()) or {}).get("services") or {}
        if len(services) > 1:
            raise TaskUnsupportedError(f"it needs {len(services)} services ({', '.join(services)}) from "
                                       "docker compose; the sandbox runs one.")
    _check_script(folder / "run-tests.sh")
    dockerfile = _read_dockerfile(folder / "Dockerfile", folder)
    weights = meta.get("test_weights") or {}
    return TerminalTask(
        name=folder.name, root=folder, layout=TERMINAL_BENCH, instruction=meta["instruction"].strip(),
        difficulty=str(meta.get("difficulty", "medium")), category=str(meta.get("category", "")),
        tags=tuple(map(str, meta.get("tags") or ())), **dockerfile,
        agent_timeout=float(meta.get("max_agent_timeout_sec", 900)),
        test_timeout=float(meta.get("max_test_timeout_sec", 60)),
        test_weights=tuple((str(k), float(v)) for k, v in weights.items()),
    )


def _harbor(folder: Path) -> TerminalTask:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    try:
        meta = tomllib.loads((folder / "task.toml").read_text())
    except tomllib.TOMLDecodeError as e:
        raise GemError(f"{folder / 'task.toml'} is not valid TOML: {e}") from None
    _require(folder, "instruction.md", "tests/test.sh")
    _check_script(folder / "tests" / "test.sh")
    environment = meta.get("environment") or {}
    if environment.get("docker_image"):
        raise TaskUnsupportedError(f"it runs in the prebuilt image {environment['docker_image']!r}, which "
                                   "the sandbox cannot provide.")
    dockerfile = _read_dockerfile(folder / "environment" / "Dockerfile", folder / "environment")
    info = meta.get("metadata") or {}
    return TerminalTask(
        name=folder.name, root=folder, layout=HARBOR, instruction=(folder / "instruction.md").read_text().strip(),
        difficulty=str(info.get("difficulty", "medium")), category=str(info.get("category", "")),
        tags=tuple(map(str, info.get("tags") or ())), **dockerfile,
        agent_timeout=float((meta.get("agent") or {}).get("timeout_sec", 900)),
        test_timeout=float((meta.get("verifier") or {}).get("timeout_sec", 60)),
    )


def _require(folder: Path, *names: str) -> None:
    for name in names:
        if not (folder / name).exists():
            raise GemError(f"The terminal task {str(folder)!r} lacks {name}.")


def _check_script(script: Path) -> None:
    """The test script must run offline with what the base has."""
    for number, line in enumerate(script.read_text().splitlines(), 1):
        code = line.split("#", 1)[0]
        found = _NEEDS.search(code)
        if found:
            raise TaskUnsupportedError(
                f"its {script.name} runs `{code.strip()}` (line {number}), which needs {found.group(1)} and the "
                "network; the sandbox has neither. Install what the tests need in the base, or rewrite them "
                "with python3's standard library.")


def _read_dockerfile(path: Path, context: Path) -> dict:
    """What a Dockerfile does, as workspace files, set-up commands, variables and the workdir."""
    if not path.is_file():
        return {}
    workdir, files, setup, env = "/app", [], [], []
    for instruction, args in _instructions(path.read_text()):
        if instruction == "FROM":
            image = args.split()[0] if args.split() else ""
            if not _BASE_IMAGES.search(image.lower()):
                raise TaskUnsupportedError(f"it is built on the image {image!r}; the sandbox offers a plain Debian "
                                           "base (bash, coreutils, python3, sqlite3).")
        elif instruction == "WORKDIR":
            workdir = str(PurePosixPath(workdir, args.strip()))
            if workdir in _SYSTEM_DIRS or any(workdir.startswith(d + "/") for d in _SYSTEM_DIRS[1:]):
                raise TaskUnsupportedError(f"its WORKDIR {workdir} is a system folder; the workspace must be a "
                                           "folder of its own, such as /app.")
        elif instruction in ("COPY", "ADD"):
            words = [w for w in _words(args) if not w.startswith("--chown")]
            if any(w.startswith("--") for w in words):
                raise TaskUnsupportedError(f"{instruction} {args}: options other than --chown need Docker.")
            if len(words) < 2:
                raise GemError(f"{path}: {instruction} {args}: give a source and a destination.")
            *sources, dest = words
            for source in sources:
                if "://" in source:
                    raise TaskUnsupportedError(f"{instruction} {source} downloads a file; the sandbox has no network.")
                host = (context / source).resolve()
                if not host.exists() or context.resolve() not in (host, *host.parents):
                    raise GemError(f"{path}: {instruction} {source}: no such file in the task folder.")
                into = host.is_file() and (len(sources) > 1 or dest.endswith("/") or dest in (".", "./"))
                target = PurePosixPath(workdir, dest, host.name if into else "")
                if workdir != str(target) and PurePosixPath(workdir) not in target.parents:
                    raise TaskUnsupportedError(f"{instruction} {source} {dest}: only the workspace {workdir} can "
                                               "be written in the sandbox.")
                files.append((host, str(target)))
        elif instruction == "RUN":
            command = _without_harness_installs(" ".join(json.loads(args)) if args.startswith("[") else args)
            found = _NEEDS.search(command)
            if found:
                raise TaskUnsupportedError(f"its Dockerfile runs `{command}`, which needs {found.group(1)} and the "
                                           "network; the sandbox offers a plain Debian base (bash, coreutils, "
                                           "grep/sed/awk, find, tar, python3, sqlite3) and no network.")
            if command:
                setup.append(command)
        elif instruction == "ENV":
            words = _words(args)
            if words and "=" not in words[0]:
                env.append((words[0], args.split(None, 1)[1] if len(words) > 1 else ""))
            else:
                env.extend(tuple(w.split("=", 1)) for w in words)
        elif instruction not in ("CMD", "ENTRYPOINT", "LABEL", "EXPOSE", "ARG", "USER", "SHELL", "VOLUME",
                                 "HEALTHCHECK", "STOPSIGNAL", "MAINTAINER"):
            raise TaskUnsupportedError(f"its Dockerfile uses {instruction}, which needs Docker.")
    return {"workdir": workdir, "files": tuple(files), "setup": tuple(setup), "env": tuple(env)}


def _without_harness_installs(command: str) -> str:
    """``command`` without the steps that only install terminal-bench's own tools (tmux,
    asciinema), which the sandbox does not need; the other steps joined by ``&&``."""
    kept = []
    for step in re.split(r"&&|;", command):
        words = step.split()
        if words[:1] in (["apt-get"], ["apt"]) and (
                words[1:2] in (["update"], ["clean"])
                or words[1:2] == ["install"] and {w for w in words[2:] if not w.startswith("-")} <= _HARNESS_TOOLS):
            continue
        if words[:3] == ["rm", "-rf", "/var/lib/apt/lists/*"]:
            continue
        if step.strip():
            kept.append(step.strip())
    return " && ".join(kept)


def _instructions(text: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    result = []
    for line in joined.splitlines():
        if line.strip():
            instruction, _, args = line.strip().partition(" ")
            result.append((instruction.upper(), args.strip()))
    return result


def _words(args: str) -> list[str]:
    if args.startswith("["):
        return list(json.loads(args))
    return shlex.split(args)

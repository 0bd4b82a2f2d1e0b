"""Terminal tasks: loading terminal-bench and Harbor task folders.

A **terminal-bench** task folder holds ``task.yaml`` (``instruction``, ``difficulty``,
``category``, ``tags``, ``max_agent_timeout_sec``, ``max_test_timeout_sec``, optionally
``test_weights``), ``Dockerfile``, ``run-tests.sh``, ``tests/`` and ``solution.sh``. A
**Harbor** task folder holds ``task.toml``, ``instruction.md``, ``environment/Dockerfile``,
``tests/test.sh`` (which writes ``/logs/verifier/reward.txt``) and ``solution/solve.sh``.

In the bubblewrap sandbox the Dockerfile is read, not built: ``FROM`` must name a plain Debian,
Ubuntu or Python base; ``WORKDIR`` names the workspace; ``COPY``/``ADD`` of the task's own files
place them in it; ``ENV`` sets variables; ``RUN`` commands run in the sandbox before the agent
starts, unless they install packages or download something, which the sandbox cannot do: such a
task records why in :attr:`TerminalTask.sandbox_needs` and runs only in a container
(:mod:`gem_envs.terminal.container`), which builds the Dockerfile as it is.

Test scripts run offline in both: terminal-bench's and Harbor's standard boilerplate (install curl,
then uv, then pytest, then run pytest) is recognised and replaced by ``python3 -m pytest`` on a
pytest that GEM supplies (:mod:`gem_envs.terminal.pytest_kit`). A script that still needs the
network raises :class:`TaskUnsupportedError` naming the line, unless the network is turned on.
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
BACKENDS = ("auto", "bubblewrap", "podman", "docker")
CONTAINER_BACKENDS = ("podman", "docker")

# Lines of terminal-bench's and Harbor's test boilerplate that only fetch the test runner, which
# GEM supplies instead: apt-get update / install of curl, uv's installer, uv's environment and
# project set-up, and installing pytest alone.
_PYTEST_DIST = r"pytest(==[\w.]+)?"
_BOILERPLATE = [re.compile(p) for p in (
    r"^(sudo\s+)?apt(-get)?\s+(-\S+\s+)*update(\s+-\S+)*$",
    r"^(sudo\s+)?apt(-get)?\s+(-\S+\s+)*install(\s+-\S+|\s+(curl|ca-certificates|tmux|asciinema))+$",
    r"^(curl|wget)\s.*astral\.sh/uv/.*\|\s*(ba)?sh$",
    r"^(source|\.)\s+\S*\.local/bin/env$",
    r"^uv\s+(init|venv)(\s+\S+)*$",
    r"^(source|\.)\s+\S*\.venv/bin/activate$",
    rf"^(uv\s+add|uv\s+pip\s+install|pip3?\s+install|python3?\s+-m\s+pip\s+install)(\s+-\S+)*(\s+{_PYTEST_DIST})+$",
)]
# Running pytest through uv: `uv run pytest ARGS`, `uvx [-p X] [-w pytest==V] pytest ARGS`.
_UV_PYTEST = re.compile(rf"^(uv\s+run(\s+--\S+)*|uvx((\s+(-p|--python)\s+\S+)|(\s+(-w|--with)\s+{_PYTEST_DIST}))*)"
                        r"\s+pytest\b")


class TaskUnsupportedError(GemError):
    """A task needs more than the chosen backend offers (a package, the network, a service, an image)."""


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
    dockerfile: Path | None = None  # what a container backend builds (its folder is the build context)
    image: str = ""  # a prebuilt image (Harbor's docker_image), used instead of building
    sandbox_needs: str = ""  # why the bubblewrap sandbox cannot run the task ("" when it can)
    test_script: str = ""  # the test script as it runs offline (the boilerplate replaced)
    test_network: str = ""  # why the test script needs the network even so ("" when it does not)

    @property
    def tests_dir(self) -> Path:
        return self.root / "tests"

    @property
    def test_command(self) -> str:
        """What grading runs, with the tests in ``/tests``."""
        return "bash /tests/run-tests.sh" if self.layout == TERMINAL_BENCH else "bash /tests/test.sh"

    @property
    def test_script_name(self) -> str:
        """The test script's name under ``/tests``."""
        return "run-tests.sh" if self.layout == TERMINAL_BENCH else "test.sh"

    @property
    def test_files(self) -> list[tuple[Path, str]]:
        """(host path, name under /tests) of everything grading copies in, but the test script
        (:attr:`test_script`, copied in as ``test_script_name``)."""
        return [(path, path.name) for path in sorted(self.tests_dir.iterdir()) if path.name != self.test_script_name]

    def backend(self, requested: str = "auto", network: bool = False) -> str:
        """The backend that runs the task: ``requested``, or for ``auto`` bubblewrap when the task
        needs nothing else, else an installed container engine; :class:`TaskUnsupportedError`
        when none can."""
        if requested == "auto":
            if not (self.sandbox_needs or self.image or (self.test_network and network)):
                requested = "bubblewrap"
            else:
                from gem_envs.terminal.container import available_engine

                requested = available_engine()
                if requested is None:
                    self.check("bubblewrap", network)
                    raise TaskUnsupportedError("it needs a container, and no container engine (podman or docker) "
                                               "works here.")
        self.check(requested, network)
        return requested

    def check(self, backend: str, network: bool = False) -> None:
        """Raise :class:`TaskUnsupportedError` if ``backend`` (``bubblewrap``, or a container
        engine) cannot run the task, with the network on or off."""
        if backend == "bubblewrap" and self.sandbox_needs:
            raise TaskUnsupportedError(self.sandbox_needs)
        if backend == "bubblewrap" and self.image:
            raise TaskUnsupportedError(f"it runs in the prebuilt image {self.image!r}, which the bubblewrap "
                                       "sandbox cannot provide; use a container backend (podman or docker).")
        if self.test_network and not (network and backend != "bubblewrap"):
            raise TaskUnsupportedError(self.test_network + (
                " Turn the network on (network=True, with a container backend) or install what the tests "
                "need in the task's image." if backend != "bubblewrap" else
                " The bubblewrap sandbox has no network; install what the tests need in the task's image and "
                "use a container backend."))

    @property
    def solution(self) -> Path:
        return self.root / ("solution.sh" if self.layout == TERMINAL_BENCH else "solution/solve.sh")


def builtin_tasks(difficulty: str | None = None) -> list[TerminalTask]:
    """The tasks that ship with GEM, by name (optionally of one difficulty)."""
    return [t for t in _builtin() if difficulty is None or t.difficulty == difficulty]


@functools.lru_cache(maxsize=1)
def _builtin() -> tuple[TerminalTask, ...]:
    return tuple(load_tasks(BUILTIN_DIR))  # read once per process: tasks are immutable


def load_tasks(path: str | Path, backend: str = "bubblewrap", network: bool = False) -> list[TerminalTask]:
    """Every task under ``path``: a task folder itself, or a folder of task folders (sorted by
    name). In a folder of them, tasks that ``backend`` cannot run are skipped with a warning."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise GemError(f"No folder of terminal tasks at {str(root)!r}: pass path= a task folder "
                       "(terminal-bench: task.yaml; Harbor: task.toml) or a folder of them.")
    if _layout(root) is not None:
        return [load_task(root, backend, network)]
    tasks, skipped = [], []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and _layout(p) is not None):
        try:
            tasks.append(load_task(folder, backend, network))
        except TaskUnsupportedError as e:
            skipped.append(folder.name)
            warnings.warn(f"Skipping terminal task {folder.name!r}: {e}", stacklevel=2)
    if not tasks:
        raise GemError(f"No usable terminal task under {str(root)!r}" + (
            f" ({len(skipped)} skipped, see the warnings)." if skipped else
            ": a task folder holds task.yaml (terminal-bench) or task.toml (Harbor)."))
    return tasks


def load_task(folder: str | Path, backend: str = "bubblewrap", network: bool = False) -> TerminalTask:
    """The task in ``folder``; :class:`TaskUnsupportedError` if ``backend`` cannot run it (see
    :meth:`TerminalTask.check`; ``auto`` checks nothing: the environment picks per task)."""
    folder = Path(folder)
    layout = _layout(folder)
    if layout == TERMINAL_BENCH:
        task = _terminal_bench(folder)
    elif layout == HARBOR:
        task = _harbor(folder)
    else:
        raise GemError(f"{str(folder)!r} is not a terminal task: it has neither task.yaml nor task.toml.")
    if backend != "auto":
        task.check(backend, network)
    return task


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
                                       "docker compose; GEM runs one container or sandbox per episode.")
    dockerfile = _dockerfile(folder / "Dockerfile", folder)
    weights = meta.get("test_weights") or {}
    return TerminalTask(
        name=folder.name, root=folder, layout=TERMINAL_BENCH, instruction=meta["instruction"].strip(),
        difficulty=str(meta.get("difficulty", "medium")), category=str(meta.get("category", "")),
        tags=tuple(map(str, meta.get("tags") or ())), **dockerfile, **_offline(folder / "run-tests.sh"),
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
    environment = meta.get("environment") or {}
    image = str(environment.get("docker_image") or "")
    dockerfile = {"image": image} if image else _dockerfile(folder / "environment" / "Dockerfile",
                                                             folder / "environment")
    info = meta.get("metadata") or {}
    return TerminalTask(
        name=folder.name, root=folder, layout=HARBOR, instruction=(folder / "instruction.md").read_text().strip(),
        difficulty=str(info.get("difficulty", "medium")), category=str(info.get("category", "")),
        tags=tuple(map(str, info.get("tags") or ())), **dockerfile, **_offline(folder / "tests" / "test.sh"),
        agent_timeout=float((meta.get("agent") or {}).get("timeout_sec", 900)),
        test_timeout=float((meta.get("verifier") or {}).get("timeout_sec", 60)),
    )


def _require(folder: Path, *names: str) -> None:
    for name in names:
        if not (folder / name).exists():
            raise GemError(f"The terminal task {str(folder)!r} lacks {name}.")


def offline_script(text: str, name: str = "run-tests.sh") -> tuple[str, str]:
    """``(script, needs)``: the test script ``text`` with the boilerplate that fetches pytest
    dropped and ``uv run pytest``/``uvx pytest`` run as ``python3 -m pytest``, and why it still
    needs the network (the first such line; ``""`` if nothing does). Line numbers are kept."""
    lines, needs = [], ""
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if code and all(any(p.match(part.strip()) for p in _BOILERPLATE) for part in _alternatives(code)):
            lines.append(f"true  # {code}  (GEM supplies pytest)")
            continue
        runner = _UV_PYTEST.match(code) if code else None
        if runner:
            line = line.replace(code, "python3 -m pytest" + code[runner.end():], 1)
        elif code and not needs:
            found = _NEEDS.search(code)
            if found:
                needs = f"its {name} runs `{code}` (line {number}), which needs {found.group(1)} and the network."
        lines.append(line)
    return "\n".join(lines) + "\n", needs


def _alternatives(code: str) -> list[str]:
    """``a || b``'s commands, each without a trailing ``2>/dev/null``."""
    return [re.sub(r"\s+2?>\s*/dev/null$", "", part.strip()) for part in code.split("||")]


def _offline(script: Path) -> dict:
    text, needs = offline_script(script.read_text(), script.name)
    return {"test_script": text, "test_network": needs}


def _dockerfile(path: Path, context: Path) -> dict:
    """The Dockerfile's effects for the bubblewrap sandbox, or why it cannot run the task there."""
    dockerfile = path if path.is_file() else None
    try:
        return {**_read_dockerfile(path, context), "dockerfile": dockerfile}
    except TaskUnsupportedError as e:
        return {"workdir": _last_workdir(path), "dockerfile": dockerfile, "sandbox_needs": str(e)}


def _last_workdir(path: Path) -> str:
    workdir = "/"
    for instruction, args in _instructions(path.read_text()):
        if instruction == "FROM":
            workdir = "/"
        elif instruction == "WORKDIR":
            workdir = str(PurePosixPath(workdir, args.strip()))
    return workdir


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

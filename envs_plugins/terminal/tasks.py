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

Test scripts run offline in both (:mod:`gem_envs.terminal.test_script`): the lines of
terminal-bench's and Harbor's boilerplate that fetch the test tools become no-ops and GEM supplies
the tools (:mod:`gem_envs.terminal.pytest_kit`). A script that still needs the network raises
:class:`TaskUnsupportedError` naming the line, unless the network is turned on.

A Harbor task's ``[environment]`` (``cpus``, ``memory_mb``, ``storage_mb``, ``allow_internet`` or
``network_mode``, ``workdir``, ``build_timeout_sec``, ``docker_image``) and ``[agent]`` and
``[verifier]`` ``timeout_sec`` are read into :class:`TerminalTask`; a compose file
(``environment/docker-compose.yaml``, or terminal-bench's ``docker-compose.yaml``) is accepted
when it describes the one container GEM runs, and refused naming its services otherwise.
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

from gem_envs.terminal.test_script import NEEDS_NETWORK, offline_script

BUILTIN_DIR = Path(__file__).parent / "tasks"
DIFFICULTIES = ("easy", "medium", "hard")
TERMINAL_BENCH, HARBOR = "terminal-bench", "harbor"
_BASE_IMAGES = re.compile(r"(^|[/_-])(debian|ubuntu|python|buildpack-deps)([:_-]|$)|t-bench/(ubuntu|python)")
_HARNESS_TOOLS = {"tmux", "asciinema"}  # what terminal-bench's harness installs for itself
_SYSTEM_DIRS = ("/", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc", "/dev", "/tmp", "/tests", "/logs")
BACKENDS = ("auto", "bubblewrap", "podman", "docker")
CONTAINER_BACKENDS = ("podman", "docker")
NETWORK_MODES = ("public", "no-network", "allowlist")  # Harbor's [environment] network_mode


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
    test_tools: tuple[str, ...] = ()  # requirements of the test tools GEM supplies to it (none: it runs no pytest)
    test_python: str = ""  # the Python version its test runner asked for (`uvx -p 3.13`), "" if none
    test_network: str = ""  # why the test script needs the network even so ("" when it does not)
    cpus: float | None = None  # Harbor's [environment] resources, for its container (None: not given)
    memory_mb: int | None = None
    storage_mb: int | None = None
    network_mode: str = "public"  # Harbor's network_mode (allow_internet = false is "no-network")
    container_workdir: str = ""  # Harbor's [environment] workdir, in place of the image's WORKDIR
    build_timeout: float | None = None  # Harbor's [environment] build_timeout_sec

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

    def internet(self, network: bool) -> bool:
        """Whether its container has the network when the user turned it on (``network``) or not:
        only when both the user and the task allow it."""
        return network and self.network_mode != "no-network"

    def backend(self, requested: str = "auto", network: bool = False) -> str:
        """The backend that runs the task: ``requested``, or for ``auto`` bubblewrap when the task
        needs nothing else, else an installed container engine; :class:`TaskUnsupportedError`
        when none can."""
        if requested == "auto":
            if not (self.sandbox_needs or self.image or (self.test_network and self.internet(network))):
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
        if self.test_network and not (self.internet(network) and backend != "bubblewrap"):
            raise TaskUnsupportedError(self.test_network + (
                " Its task.toml turns the network off." if network and backend != "bubblewrap" else
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
    _check_compose(folder)
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
    toml = folder / "task.toml"
    environment = _table(meta, "environment", toml)
    image = str(environment.get("docker_image") or "")
    dockerfile = {"image": image} if image else _dockerfile(folder / "environment" / "Dockerfile",
                                                             folder / "environment")
    _check_compose(folder / "environment")
    settings = _environment_settings(environment, toml)
    if settings["container_workdir"] and not image:
        dockerfile = _with_workdir(dockerfile, settings["container_workdir"])
    info = _table(meta, "metadata", toml)
    return TerminalTask(
        name=folder.name, root=folder, layout=HARBOR, instruction=(folder / "instruction.md").read_text().strip(),
        difficulty=str(info.get("difficulty", "medium")), category=str(info.get("category", "")),
        tags=tuple(map(str, info.get("tags") or ())), **dockerfile, **_offline(folder / "tests" / "test.sh"),
        agent_timeout=_positive(_table(meta, "agent", toml), "timeout_sec", toml, "agent", 900.0),
        test_timeout=_positive(_table(meta, "verifier", toml), "timeout_sec", toml, "verifier", 600.0),
        **settings,
    )


def _table(meta: dict, name: str, path: Path) -> dict:
    table = meta.get(name) or {}
    if not isinstance(table, dict):
        raise GemError(f"{path}: [{name}] must be a table, not {table!r}.")
    return table


def _positive(table: dict, key: str, path: Path, section: str, default: float | None) -> float | None:
    """``table[key]``, a positive number (``default`` when absent); a clear error otherwise."""
    value = table.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise GemError(f"{path}: [{section}] {key} must be a positive number, not {value!r}.")
    return float(value)


def _megabytes(environment: dict, key: str, path: Path) -> int | None:
    """``memory_mb``/``storage_mb``, or Harbor's older ``memory``/``storage`` ("2G", "512M")."""
    value = _positive(environment, f"{key}_mb", path, "environment", None)
    old = environment.get(key)
    if value is None and old is not None:
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([GMK])B?\s*", str(old).upper())
        if not match:
            raise GemError(f"{path}: [environment] {key} must be a size such as '2G' or '512M', not {old!r}.")
        value = float(match.group(1)) * {"G": 1024, "M": 1, "K": 1 / 1024}[match.group(2)]
    return None if value is None else max(1, int(value))


def _environment_settings(environment: dict, path: Path) -> dict:
    """The resources, network and workdir that a Harbor task's ``[environment]`` asks for."""
    mode = environment.get("network_mode")
    internet = environment.get("allow_internet")
    if internet is not None and not isinstance(internet, bool):
        raise GemError(f"{path}: [environment] allow_internet must be true or false, not {internet!r}.")
    if mode is None:
        mode = "no-network" if internet is False else "public"
    if mode not in NETWORK_MODES:
        raise GemError(f"{path}: [environment] network_mode must be one of {', '.join(NETWORK_MODES)}, not {mode!r}.")
    workdir = environment.get("workdir") or ""
    if workdir and not (isinstance(workdir, str) and workdir.startswith("/")):
        raise GemError(f"{path}: [environment] workdir must be an absolute path, not {workdir!r}.")
    return {"cpus": _positive(environment, "cpus", path, "environment", None),
            "memory_mb": _megabytes(environment, "memory", path),
            "storage_mb": _megabytes(environment, "storage", path),
            "network_mode": mode, "container_workdir": workdir,
            "build_timeout": _positive(environment, "build_timeout_sec", path, "environment", None)}


def _with_workdir(dockerfile: dict, workdir: str) -> dict:
    """The bubblewrap reading of a Dockerfile with the workspace moved to ``workdir`` (Harbor's
    ``[environment] workdir``); its files must then lie in it."""
    if dockerfile.get("sandbox_needs"):
        return {**dockerfile, "workdir": workdir}
    outside = [target for _, target in dockerfile.get("files", ()) if not _within(target, workdir)]
    if outside or _system_folder(workdir):
        why = (f"its Dockerfile places {outside[0]} outside the workdir {workdir} that task.toml sets" if outside
               else f"task.toml's workdir {workdir} is a system folder")
        return {**dockerfile, "workdir": workdir, "sandbox_needs": f"{why}; only the workspace can be written in the "
                                                                    "sandbox. Use a container backend."}
    return {**dockerfile, "workdir": workdir}


def _system_folder(path: str) -> bool:
    return path in _SYSTEM_DIRS or any(path.startswith(d + "/") for d in _SYSTEM_DIRS[1:])


def _within(path: str, folder: str) -> bool:
    return path == folder or PurePosixPath(folder) in PurePosixPath(path).parents


def _check_compose(folder: Path) -> None:
    """Refuse a compose file of several services (GEM runs one container or sandbox per episode);
    one service is the task's own container, built from its Dockerfile."""
    import yaml

    for name in ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml"):
        compose = folder / name
        if not compose.is_file():
            continue
        try:
            content = yaml.safe_load(compose.read_text()) or {}
        except yaml.YAMLError as e:
            raise GemError(f"{compose} is not valid YAML: {e}") from None
        services = content.get("services") or {} if isinstance(content, dict) else {}
        if len(services) > 1:
            raise TaskUnsupportedError(f"its {name} describes {len(services)} services ({', '.join(services)}); GEM "
                                       "runs one container or sandbox per episode, so a task with services beside "
                                       "its own container cannot be played.")


def _require(folder: Path, *names: str) -> None:
    for name in names:
        if not (folder / name).exists():
            raise GemError(f"The terminal task {str(folder)!r} lacks {name}.")


def _offline(script: Path) -> dict:
    offline = offline_script(script.read_text(), script.name)
    return {"test_script": offline.text, "test_tools": offline.tools, "test_python": offline.python,
            "test_network": offline.network}


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
            if _system_folder(workdir):
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
            found = NEEDS_NETWORK.search(command)
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

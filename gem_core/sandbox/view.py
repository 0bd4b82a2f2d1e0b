"""What a Python sandbox shows of its interpreter: the standard library and the packages the code
is meant to use, never the rest of what is installed.

Every folder of installed packages (each ``site-packages`` and ``dist-packages`` of the
interpreter, of the interpreter it was made from, of the user and of the system's Pythons) is
shown empty but for the distributions asked for (``packages``, :data:`DEFAULT_PACKAGES` by
default) and their dependencies, each at its own path; the interpreter itself shows its
executable, its ``pyvenv.cfg`` and its libraries (the standard library among them). So an
environment pack's data, a dataset's files and a grader's answer key are simply not there,
whatever the install (editable, wheel, ``--user``, a virtual environment anywhere): opening one
raises ``FileNotFoundError`` as for any missing file. GEM's cache folder and Hugging Face's are
shown empty wherever they lie. Packages installed in editable mode are shown under their import
names in :data:`~gem_core.sandbox.bubblewrap.VIEW_ROOT`, which ends the sandbox's ``sys.path``.

The distributions' files are found by :mod:`gem_core.sandbox.packages_probe`, run once in the
interpreter for each set of names (so ``python=`` may be any interpreter).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from collections.abc import Sequence
from importlib import resources

from gem_core.sandbox.bubblewrap import (  # noqa: F401 - PackageView: the view's type, importable from here
    SYSTEM_DIRS,
    Interpreter,
    PackageView,
    SandboxConfigError,
    is_under,
)

#: The distributions a sandbox shows by default (each only where it is installed), with their
#: dependencies: numeric, symbolic and graph computing and the containers programming problems use.
DEFAULT_PACKAGES = ("numpy", "scipy", "sympy", "pandas", "networkx", "sortedcontainers")
PROBE_TIMEOUT = 120.0


def package_view(python: Interpreter, packages: Sequence[str] | None = None) -> PackageView:
    """The view of ``python`` showing ``packages`` (distribution names, or import names such as
    ``sklearn``) and their dependencies; None shows those of :data:`DEFAULT_PACKAGES` that are
    installed. A name asked for that is not installed raises :class:`SandboxConfigError`."""
    names = check_packages(packages)
    view, missing = _view(python, names, data_caches())
    if missing and packages is not None:
        raise SandboxConfigError(
            f"The sandbox cannot show {', '.join(map(repr, missing))}: not installed for {python.executable}. "
            "Install it there, or leave it out of packages (the standard library is always shown; "
            f"the default packages are {', '.join(DEFAULT_PACKAGES)}).")
    return view


def check_packages(packages: Sequence[str] | None) -> tuple[str, ...]:
    """``packages`` as a tuple of names (the defaults for None); anything else raises."""
    if packages is None:
        return DEFAULT_PACKAGES
    if isinstance(packages, str) or not all(isinstance(name, str) and name.strip() for name in packages):
        raise SandboxConfigError(f"packages must be a list of package names, got {packages!r}.")
    return tuple(dict.fromkeys(name.strip() for name in packages))


@functools.lru_cache(maxsize=32)
def _view(python: Interpreter, names: tuple[str, ...], caches: tuple[str, ...]) -> tuple[PackageView, list[str]]:
    found = _probe(python.executable, names)
    shown = tuple(found["shown"])
    libraries = tuple(found["libraries"])
    visible_roots = (*SYSTEM_DIRS, *libraries, *shown)
    masked = tuple(c for c in caches if os.path.isdir(c) and is_under(os.path.realpath(c), visible_roots))
    view = PackageView(
        python=python, packages=tuple(found["packages"]), sys_path=tuple(found["sys_path"]),
        executable=tuple((path, target) for path, target in found["executable"]), files=tuple(found["files"]),
        libraries=libraries, site_dirs=tuple(found["site_dirs"]), shown=shown,
        aliases=tuple((path, name) for path, name in found["aliases"]), masked=masked)
    return view, found["missing"]


def _probe(executable: str, names: tuple[str, ...]) -> dict:
    source = resources.files("gem_core.sandbox").joinpath("packages_probe.py").read_text(encoding="utf-8")
    try:
        out = subprocess.run([executable, "-E", "-c", source, json.dumps(list(names))], capture_output=True,
                             text=True, timeout=PROBE_TIMEOUT, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SandboxConfigError(f"Cannot ask {executable!r} which packages it has installed: {e}") from None
    if out.returncode != 0:
        raise SandboxConfigError(f"{executable!r} could not list its installed packages: {out.stderr.strip()[-500:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def data_caches() -> tuple[str, ...]:
    """GEM's cache folder and Hugging Face's, as this process has them configured."""
    from gem_core.cache import CACHE_ENV_VAR

    # Asked at every call of the Python tool: worked out again only when what it depends on changes
    # (a relative path is the working directory's).
    try:
        cwd = os.getcwd()
    except OSError:  # the working directory was removed
        cwd = None
    return _data_caches(cwd, tuple(os.environ.get(name) for name in (CACHE_ENV_VAR, *_CACHE_VARIABLES)))


_CACHE_VARIABLES = ("HOME", "XDG_CACHE_HOME", "HF_HOME", "HF_DATASETS_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE",
                    "TRANSFORMERS_CACHE")


@functools.lru_cache(maxsize=8)
def _data_caches(cwd: str | None, environment: tuple[str | None, ...]) -> tuple[str, ...]:
    from gem_core.cache import cache_dir

    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    hf_home = os.environ.get("HF_HOME") or os.path.join(xdg, "huggingface")
    found = [str(cache_dir()), hf_home]
    found += [os.environ[name] for name in ("HF_DATASETS_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE",
                                            "TRANSFORMERS_CACHE") if os.environ.get(name)]
    return tuple(sorted({os.path.abspath(os.path.expanduser(path)) for path in found}))

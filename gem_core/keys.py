"""Answer keys: the files a pack declares as holding its answers and tests.

A pack declares them through the ``gem_register_keys`` hook, as it registers environments::

    @hookimpl
    def gem_register_keys(register):
        register("almanac", "gem_envs.qa:almanac/questions.jsonl", description="questions with their answers")
        register("tasks", ["mypack:tasks/*/solution.sh", "mypack:tasks/*/tests"])

Each path is ``"package:relative path"`` (a file or folder inside an importable package's
folder, wherever it is installed; the package is found, not imported) or an absolute path; either
may hold ``*`` and ``**`` globs. Declaring reads nothing: :func:`key_files` finds the files when
they are needed (:func:`gem_core.registry.declared_keys` lists the declarations). GEM's sandboxes never show these files to an agent's code (they show only the
packages the code may use, see :mod:`gem_core.sandbox.view`); the reward-hacking probe tries to
read them from inside every sandbox an environment runs the agent's code in, and ``gem check``
fails when a declared path matches no file.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from gem_core.errors import GemError, InvalidRegistrationError

_PACKAGE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass(frozen=True)
class Key:
    """A declared answer key: ``paths`` as declared (see the module documentation)."""

    name: str
    paths: tuple[str, ...]
    description: str = ""
    source: str = "<unknown>"


def build_key(name: str, paths: str | Sequence[str], *, description: str = "", source: str = "<unknown>") -> Key:
    """Validate a key's declaration and return it (nothing is looked up)."""
    if not isinstance(name, str) or not name or any(c.isspace() or c == "," for c in name):
        raise InvalidRegistrationError(f"Invalid key name {name!r} (from {source}).")
    paths = (paths,) if isinstance(paths, str) else tuple(paths)
    if not paths:
        raise InvalidRegistrationError(f"The key {name!r} (from {source}) declares no path.")
    for path in paths:
        package, colon, relative = path.partition(":") if isinstance(path, str) else ("", "", "")
        absolute = isinstance(path, str) and path.startswith("/")
        relative_ok = colon and _PACKAGE.match(package) and relative and not relative.startswith("/") \
            and ".." not in relative.split("/")
        if not (absolute or relative_ok):
            raise InvalidRegistrationError(
                f"Invalid path {path!r} of the key {name!r} (from {source}): expected 'package:relative/path' "
                "(a file or folder inside an installed package, globs allowed) or an absolute path.")
    return Key(name, paths, description, source)


def resolve(path: str) -> str | None:
    """The absolute pattern a declared path stands for, or None when its package is not installed
    (its files are nowhere to be read)."""
    if path.startswith("/"):
        return path
    package, _, relative = path.partition(":")
    found = locate(package)
    if found is None:
        return None
    folder = found[0] if os.path.isdir(found[0]) else os.path.dirname(found[0])
    return os.path.join(folder, relative)


def locate(module: str) -> tuple[str, str] | None:
    """Where ``module`` (a package, or a module of one file; dotted names too) lies, and that path
    below its folder of ``sys.path``; found without importing it or its parents. None when it is
    not installed."""
    parts = module.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        path = next(iter(spec.submodule_search_locations))
        for part in parts[1:]:
            if os.path.isdir(os.path.join(path, part)):
                path = os.path.join(path, part)
            elif os.path.isfile(os.path.join(path, part + ".py")):
                return os.path.join(path, part + ".py"), "/".join(parts) + ".py"
            else:
                return None
        return path, "/".join(parts)
    if spec.origin and os.path.isfile(spec.origin) and len(parts) == 1:
        return spec.origin, os.path.basename(spec.origin)
    return None


def matches(path: str) -> list[str]:
    """The files a declared path matches (a folder's files, recursively), sorted; none when its
    package is not installed."""
    pattern = resolve(path)
    found: set[str] = set()
    for match in glob.glob(pattern, recursive=True) if pattern is not None else ():
        if os.path.isdir(match):
            for folder, _, names in os.walk(match):
                found.update(os.path.join(folder, name) for name in names)
        elif os.path.isfile(match):
            found.add(match)
    return sorted(found)


def key_files(key: Key) -> list[str]:
    """Every file ``key`` declares; a path that matches none where its package is installed (or
    an absolute one that matches none) raises :class:`GemError` naming it."""
    files: list[str] = []
    for path in key.paths:
        found = matches(path)
        pattern = resolve(path)
        if not found and pattern is not None:
            raise GemError(f"{key.source} declares the key {key.name!r} at {path!r}, which matches no file "
                           f"(looked for {pattern}). Fix the declaration, or ship the file.")
        files += found
    return files

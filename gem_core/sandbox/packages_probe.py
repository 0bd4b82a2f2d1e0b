"""Which files of an interpreter a sandbox shows: run in that interpreter, as a program.

``python -E -c SOURCE NAMES_JSON`` (the source of this file) prints one JSON object describing
the interpreter and the distributions ``NAMES_JSON`` lists, their dependencies included (see
:mod:`gem_core.sandbox.view`, which runs it and builds the sandbox from its answer)::

    {"sys_path": [...],       # the interpreter's absolute sys.path entries, site folders included
     "executable": [[path, link target or null], ...],  # the executable and the symbolic links to it
     "files": [...],          # other single files the interpreter needs (a virtual environment's pyvenv.cfg)
     "libraries": [...],      # folders shown whole: the standard library, the interpreter's shared libraries
     "site_dirs": [...],      # folders of installed packages: shown empty, but for "shown"
     "shown": [...],          # the files and folders of the distributions asked for, at their own paths
     "aliases": [[path, name], ...],  # editable installs' packages, shown as NAME in the view's own folder
     "packages": [...],       # "name version" of every distribution shown
     "missing": [...]}        # names asked for that are not installed

A distribution's files are those its ``RECORD`` lists, shown by their top-level entry: a package
folder (one with an ``__init__.py`` of the distribution's own) or a metadata folder whole, and
otherwise (a namespace package, ``__pycache__``, ``numpy.libs``) entry by entry, so that nothing
another distribution put beside them is shown. Standard library only; never imports a package.
"""

import glob
import json
import os
import re
import site
import sys

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_SITE_NAMES = ("site-packages", "dist-packages")
# Where Debian, Fedora and others install packages for the system's interpreters, any version.
_SYSTEM_SITES = ("/usr/lib/python3/dist-packages", "/usr/lib*/python3*/*-packages", "/usr/local/lib*/python3*/*-packages")


def main(names):
    from importlib import metadata

    stdlib = {os.path.dirname(os.path.realpath(os.__file__))}
    sys_path = [path for path in sys.path if path and os.path.isabs(path)]
    dynload = {path for path in sys_path if os.path.basename(path) == "lib-dynload" or path.endswith(".zip")}
    own = stdlib | {os.path.realpath(path) for path in dynload}
    libraries = sorted({path for prefix in (sys.base_prefix, sys.base_exec_prefix) for lib in ("lib", "lib64")
                        for path in [os.path.join(prefix, lib)] if os.path.isdir(path) and not os.path.islink(path)}
                       | stdlib)
    site_dirs = {path for path in sys_path if os.path.realpath(path) not in own}
    site_dirs.update(site.getsitepackages() if hasattr(site, "getsitepackages") else ())
    for library in libraries:
        for name in _SITE_NAMES:
            site_dirs.update(glob.glob(os.path.join(library, "python*", name)))
    for pattern in _SYSTEM_SITES:
        site_dirs.update(glob.glob(pattern))
    # A folder holding the standard library is no folder of packages (a PYTHONPATH of /usr, say).
    site_dirs = {d for d in site_dirs
                 if not any(p == r or p.startswith(r.rstrip("/") + "/") for r in [os.path.realpath(d)] for p in own)}
    shown, aliases, packages, missing = [], [], [], []
    seen = set()
    queue = [(name, True) for name in names]
    while queue:
        name, asked = queue.pop(0)
        if _normalize(name) in seen:
            continue
        dist = _distribution(metadata, name, by_import_name=asked)
        if dist is None:
            if asked:
                missing.append(name)
            continue
        about = _headers(dist)
        dist_name = (about.get("Name") or [name])[0]
        seen.update((_normalize(dist_name), _normalize(name)))
        packages.append(f"{dist_name} {(about.get('Version') or ['?'])[0]}")
        found, editable = _entries(dist)
        shown += found
        aliases += editable
        for requirement in _requirements(dist, about):
            requirement_name, _, marker = requirement.partition(";")
            match = _NAME.match(requirement_name.strip())
            if match and "extra" not in marker:  # a dependency of an extra is not needed
                queue.append((match.group(), False))
    executable = []
    path = sys.executable
    while path and len(executable) < 16:
        target = os.readlink(path) if os.path.islink(path) else None
        executable.append([path, target])
        path = os.path.join(os.path.dirname(path), target) if target else None
    files = [os.path.join(sys.prefix, "pyvenv.cfg")] if sys.prefix != sys.base_prefix else []
    return {"sys_path": sys_path, "executable": executable, "files": [f for f in files if os.path.isfile(f)],
            "libraries": libraries, "site_dirs": sorted(d for d in site_dirs if os.path.isdir(d)),
            "shown": sorted(set(shown)), "aliases": aliases, "packages": packages, "missing": missing}


def _normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _headers(dist):
    """The metadata's headers (``email``'s parser reads the long description too, slowly)."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    headers = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, colon, value = line.partition(":")
        if colon and not line[:1].isspace():
            headers.setdefault(key.strip(), []).append(value.strip())
    return headers


def _requirements(dist, headers):
    if "Requires-Dist" in headers:
        return headers["Requires-Dist"]
    text = dist.read_text("requires.txt") or ""  # an egg-info's: unconditional ones come first
    return [line.strip() for line in text.split("[", 1)[0].splitlines() if line.strip()]


def _distribution(metadata, name, by_import_name):
    """The distribution named ``name``, or (``by_import_name``) the one that installs the import
    package ``name`` (which reads every distribution's files)."""
    try:
        return metadata.distribution(name)
    except metadata.PackageNotFoundError:
        if not by_import_name:
            return None
    for dist_name in metadata.packages_distributions().get(name, ()):
        try:
            return metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            pass
    return None


def _entries(dist):
    """The paths that show ``dist`` (see the module documentation), and its editable packages."""
    root = str(dist.locate_file(""))
    meta = getattr(dist, "_path", None)
    entries = [str(meta)] if meta is not None else []
    if _editable(dist):
        names = (dist.read_text("top_level.txt") or "").split()
        return entries, [alias for name in names for alias in _alias(name)]
    record = dist.read_text("RECORD")
    if record is None:  # no RECORD (an old or a system installer): the top-level names it declares
        for name in (dist.read_text("top_level.txt") or "").split():
            entries += glob.glob(os.path.join(root, name)) + glob.glob(os.path.join(root, name + ".*"))
        return entries, []
    parts = [tuple(path.split("/")) for path in map(_record_path, record.splitlines())]
    return entries + _shown(root, [p for p in parts if p[0] not in ("", "..")]), []


def _record_path(line):
    """The path of one line of a RECORD (CSV: the path, quoted if it holds a comma or a quote)."""
    if line.startswith('"'):
        import csv

        line = next(csv.reader([line]), [""])[0]
    return line.split(",", 1)[0].replace("\\", "/")


def _shown(folder, parts):
    """The paths below ``folder`` that show the files ``parts`` (relative, split)."""
    by_top = {}
    for part in parts:
        by_top.setdefault(part[0], []).append(part[1:])
    found = []
    for top, rest in by_top.items():
        path = os.path.join(folder, top)
        if not os.path.lexists(path):
            continue
        package = any(len(r) == 1 and r[0].startswith("__init__.") for r in rest)
        if not os.path.isdir(path) or (package and top != "__pycache__") or top.endswith((".dist-info", ".egg-info")):
            found.append(path)
        else:
            found += _shown(path, [r for r in rest if r])
    return found


def _editable(dist):
    try:
        return bool(json.loads(dist.read_text("direct_url.json") or "{}").get("dir_info", {}).get("editable"))
    except ValueError:
        return False


def _alias(name):
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [[next(iter(spec.submodule_search_locations)), name]]
    if spec.origin and os.path.isfile(spec.origin):
        return [[spec.origin, os.path.basename(spec.origin)]]
    return []


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))

"""GEM's pytest launcher: the ``pytest`` (and ``py.test``) of the test tools that GEM supplies to
terminal tasks (:mod:`gem_envs.terminal.pytest_kit` installs it in each kit's ``bin``).

It runs pytest from the kit it lies in, so that nothing the agent left can change how the tests
run, only the files they examine:

* ``sys.path``: the kit first, the working directory last (a test may import the agent's module
  from it, but no ``pytest.py`` or ``json.py`` there shadows a tool); the launcher itself runs
  with ``python3 -s`` (no user site);
* pytest's configuration: the task's own (a ``pytest.ini``, ``.pytest.ini``, ``pyproject.toml``,
  ``tox.ini`` or ``setup.cfg`` in the tests folder, ``$TEST_DIR``), else the kit's empty one, so
  that no configuration file elsewhere (the working directory, ``/``) applies, its ``addopts``
  included; the root folder is the one pytest would choose without a configuration file;
* ``conftest.py`` files: none when the tests folder ships none, else none above the root folder.

A test script that passes its own ``-c``/``--config-file`` keeps its choice. This file runs in
the sandbox or container, on its ``python3`` (any version pytest supports), with the standard
library and the kit only.
"""

import os
import sys

CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")  # pytest's order
OWN_CONFIG = "gem-pytest.ini"  # the kit's empty configuration, beside its packages


def main():
    kit = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path[:] = [kit] + [entry for entry in sys.path[1:] if entry != kit]  # [0] was this file's folder
    sys.path.append(os.getcwd())
    import pytest

    code = pytest.main(arguments(sys.argv[1:], kit))
    sys.stdout.flush()
    sys.exit(int(code))


def arguments(args, kit):
    """``args`` with GEM's configuration options first, unless the script chose a configuration."""
    if any(arg == "-c" or arg.startswith("--config-file") or arg.startswith("-c") and not arg.startswith("--")
           for arg in args):
        return args
    tests = os.environ.get("TEST_DIR") or "/tests"
    shipped = shipped_config(tests)
    root = os.path.dirname(shipped) if shipped else rootdir(args)
    options = ["-c", shipped or os.path.join(kit, OWN_CONFIG)]
    if not any(arg == "--rootdir" or arg.startswith("--rootdir=") for arg in args):
        options.append("--rootdir=" + root)
    if not ships_conftest(tests):
        options.append("--noconftest")
    elif not any(arg == "--confcutdir" or arg.startswith("--confcutdir=") for arg in args):
        options.append("--confcutdir=" + root)
    return options + args


def shipped_config(tests):
    """The tests folder's pytest configuration file, as pytest would pick it, or None."""
    for name in CONFIG_FILES:
        path = os.path.join(tests, name)
        if not os.path.isfile(path):
            continue
        if name in ("pytest.ini", ".pytest.ini"):
            return path  # pytest takes these even when empty
        try:
            from pathlib import Path

            from _pytest.config.findpaths import load_config_dict_from_file

            if load_config_dict_from_file(Path(path)) is not None:
                return path
        except Exception:  # unreadable, or a pytest without that helper: not a configuration
            continue
    return None


def ships_conftest(tests):
    return any("conftest.py" in files for _, _, files in os.walk(tests))


def rootdir(args):
    """The root folder pytest picks when no configuration file is found: the common ancestor of
    the paths given (the working directory if none), joined with the working directory unless
    that is ``/``."""
    cwd = os.getcwd()
    paths = [os.path.abspath(arg.split("::")[0]) for arg in args
             if not arg.startswith("-") and os.path.exists(arg.split("::")[0])]
    if not paths:
        return cwd
    ancestor = os.path.commonpath([path if os.path.isdir(path) else os.path.dirname(path) for path in paths])
    common = os.path.commonpath([cwd, ancestor])
    return ancestor if common == os.sep else common


if __name__ == "__main__":
    main()

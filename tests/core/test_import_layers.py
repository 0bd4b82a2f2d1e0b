"""The code reads bottom-up: no import cycle inside gem_core or any other of the project's
packages, counting every import (at module level, inside a function, or for type checkers only),
no module imports another module's private name anywhere in the project's packages, and the
serving wing (gem_serve) is a plugin that nothing below it imports."""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Folder -> import name of the project's packages (pyproject's package-dir).
PACKAGES = {"gem_core": "gem_core", "envs_plugins": "gem_envs", "adapters": "gem_adapters", "trainer": "gem_trainer",
            "serve": "gem_serve"}


def modules(folder: str) -> dict[str, Path]:
    """Dotted module name -> file, for every module of one package (terminal tasks' data excluded)."""
    root = REPO / folder
    found = {}
    for path in root.rglob("*.py"):
        if "tasks" in path.relative_to(root).parts:
            continue
        parts = [PACKAGES[folder], *path.relative_to(root).with_suffix("").parts]
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


ALL = {name: path for folder in PACKAGES for name, path in modules(folder).items()}


def imports(module: str) -> list[tuple[str, str | None]]:
    """``(imported module, imported name or None)`` for every project import in ``module``."""
    path = ALL[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names if alias.name in ALL]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                if f"{source}.{alias.name}" in ALL:  # a submodule
                    found.append((f"{source}.{alias.name}", None))
                elif source in ALL:
                    found.append((source, alias.name))
    return found


def test_gem_core_has_no_import_cycle():
    core = [name for name in ALL if name.split(".")[0] == "gem_core"]
    graph = {name: {source for source, _ in imports(name) if source != name and source in core} for name in core}
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        raise AssertionError(f"import cycle in gem_core: {' -> '.join(e.args[1])}") from None
    assert order.index("gem_core.errors") < order.index("gem_core.core") < order.index("gem_core.registry")


@pytest.mark.parametrize("package", [name for name in PACKAGES.values() if name != "gem_core"])
def test_no_other_package_has_an_import_cycle_either(package):
    inside = [name for name in ALL if name.split(".")[0] == package]
    graph = {name: {source for source, _ in imports(name) if source != name and source in inside} for name in inside}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as e:
        raise AssertionError(f"import cycle in {package}: {' -> '.join(e.args[1])}") from None


#: Packs built on other packs, and on which; an import from one pack into another that is not
#: listed here fails. Whatever several packs share lives beside them (gem_envs.data,
#: gem_envs.question) or in gem_core (the scoring workers), so that math and reasoning-gym's
#: environments, for one, do not reach into each other.
BUILT_ON = {
    "gem_envs.math": {"gem_envs.rg"},  # its generated problems are reasoning-gym datasets
    "gem_envs.vision": {"gem_envs.math", "gem_envs.rg"},  # their tasks, drawn
    "gem_envs.wikigame": {"gem_envs.game"},  # a game under the game pack's rules
}


def test_packs_import_only_the_packs_they_are_built_on():
    packs = {name for name in ALL if name.count(".") == 1 and name.startswith("gem_envs.")
             and ALL[name].name == "__init__.py"}
    found: dict[str, set[str]] = {}
    for module in ALL:
        pack = ".".join(module.split(".")[:2])
        for source, _ in imports(module) if pack in packs else ():
            other = ".".join(source.split(".")[:2])
            if other in packs and other != pack:
                found.setdefault(pack, set()).add(other)
    assert found == BUILT_ON
    graphlib.TopologicalSorter(BUILT_ON).prepare()  # no two packs built on each other


def test_no_module_imports_another_modules_private_name():
    private = sorted(f"{module} imports {source}.{name}" for module in ALL for source, name in imports(module)
                     if name and name.startswith("_") and not name.startswith("__") and source != module)
    assert private == []


#: Adapter modules that drive agent programs through the serving wing's gateway (verl's
#: ``gem_agent`` loop): the one place an adapter builds on the wing, behind the ``gateway`` extra.
GATEWAY_LOOPS = {"gem_adapters.verl.harness"}


@pytest.mark.parametrize("package", ["gem_core", "gem_envs", "gem_adapters"])
def test_the_core_the_packs_and_the_adapters_never_import_the_serving_wing(package):
    inside = [name for name in ALL if name.split(".")[0] == package and name not in GATEWAY_LOOPS]
    found = sorted(f"{module} imports {source}" for module in inside for source, _ in imports(module)
                   if source.split(".")[0] == "gem_serve")
    assert found == []


def test_the_serving_wing_lists_its_modules_and_the_core_no_longer_serves():
    import gem_core
    import gem_serve

    wing = sorted(name for name in ALL if name.startswith("gem_serve."))
    assert wing, "no module found in serve/"
    assert [name for name in wing if f":mod:`{name}`" not in gem_serve.__doc__] == []
    assert "remote" not in gem_core.__doc__  # which lists what gem_core holds (test_package_docstrings_...)
    assert not (REPO / "gem_core" / "remote").exists()


def test_plugins_still_load_on_the_first_lookup_only():
    from tests.helpers import run_python

    result = run_python("""
        import gem_core, gem_core.plugins as plugins
        assert plugins._state == "unloaded", plugins._state
        gem_core.spec("game:GuessTheNumber-v0-easy")
        assert plugins._state == "partial" and sorted(plugins._reports) == ["core", "game"], plugins._reports
        gem_core.list_envs()
        assert plugins._state == "loaded"
        print("ok")
    """)
    assert result.stdout.strip() == "ok", result.stderr


def test_no_package_hides_a_module_behind_a_name_of_its_own():
    """``from package import name`` must not give a function where ``package/name.py`` exists."""
    hidden = []
    for package, path in ALL.items():
        if path.name != "__init__.py":
            continue
        submodules = {name.rpartition(".")[2] for name in ALL if name.rpartition(".")[0] == package}
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom):
                bound = [(alias.asname or alias.name) for alias in node.names
                         if f"{node.module}.{alias.name}" not in ALL]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound = [node.name]
            elif isinstance(node, ast.Assign):
                bound = [target.id for target in node.targets if isinstance(target, ast.Name)]
            else:
                continue
            hidden += [f"{package}.{name}" for name in bound if name in submodules]
    assert hidden == []


#: Packages whose docstring names (``:mod:``) every module and subpackage they hold, and nothing else.
LISTING = ["gem_core", "gem_core.sandbox", "gem_core.tools", "gem_core.vector", "gem_core.estimators",
           "gem_core.rubrics", "gem_core.wrappers", "gem_envs", "gem_adapters", "gem_adapters.common",
           *[name for name in ALL if name.count(".") == 1 and name.startswith("gem_envs.")
             and ALL[name].name == "__init__.py"]]


@pytest.mark.parametrize("package", LISTING)
def test_package_docstrings_list_what_is_there(package):
    doc = ast.get_docstring(ast.parse(ALL[package].read_text())) or ""
    children = {name for name in ALL if name.rpartition(".")[0] == package}
    named = {f"{package}.{child}" for child in re.findall(rf":mod:`~?{re.escape(package)}\.(\w+)", doc)}
    assert sorted(children - named) == [], "modules the docstring does not name"
    assert sorted(named - children) == [], "modules the docstring names that are not there"

"""The code reads bottom-up: no import cycle inside gem_core or any other of the project's
packages, counting every import (at module level, inside a function, or for type checkers only),
no module imports another module's private name anywhere in the project's packages, and the
serving wing (gem_serve) is a plugin that nothing below it imports."""

from __future__ import annotations

import ast
import graphlib
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


def test_no_module_imports_another_modules_private_name():
    private = sorted(f"{module} imports {source}.{name}" for module in ALL for source, name in imports(module)
                     if name and name.startswith("_") and not name.startswith("__") and source != module)
    assert private == []


@pytest.mark.parametrize("package", ["gem_core", "gem_envs", "gem_adapters"])
def test_the_core_the_packs_and_the_adapters_never_import_the_serving_wing(package):
    inside = [name for name in ALL if name.split(".")[0] == package]
    found = sorted(f"{module} imports {source}" for module in inside for source, _ in imports(module)
                   if source.split(".")[0] == "gem_serve")
    assert found == []


def test_the_serving_wing_lists_its_modules_and_the_core_no_longer_serves():
    import gem_core
    import gem_serve

    wing = sorted(name for name in ALL if name.startswith("gem_serve."))
    assert wing, "no module found in serve/"
    assert [name for name in wing if f":mod:`{name}`" not in gem_serve.__doc__] == []
    subpackages = sorted(path.parent.name for path in (REPO / "gem_core").glob("*/__init__.py"))
    assert [name for name in subpackages if f":mod:`gem_core.{name}`" not in gem_core.__doc__] == []
    assert "remote" not in gem_core.__doc__
    assert not (REPO / "gem_core" / "remote").exists()


def test_plugins_still_load_on_the_first_lookup_only():
    from tests.helpers import run_python

    result = run_python("""
        import gem_core, gem_core.plugins as plugins
        assert plugins._state == "unloaded", plugins._state
        gem_core.spec("game:GuessTheNumber-v0-easy")
        assert plugins._state == "loaded"
        print("ok")
    """)
    assert result.stdout.strip() == "ok", result.stderr

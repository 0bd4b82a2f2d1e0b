"""Every module of the project that lists its public names in ``__all__``, and the test stage that
owns it: ``gem_adapters.<lib>`` belongs to the stages of that adapter (scripts/adapter_envs.py),
whose environment has its library; everything else to the core stage.

    python -m tests.docs.public_names MODULE...   # import each, look up each name of its __all__; JSON out

The modules are found without importing them (a module-level ``__all__`` in the source of every
package under the folders ``[tool.setuptools.package-dir]`` maps), so a module whose import fails
is still found, and fails.
"""

from __future__ import annotations

import ast
import importlib
import json
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def package_folders() -> dict[str, Path]:
    """Top-level import name -> its folder, as pyproject.toml maps them."""
    table = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return {name: REPO / folder for name, folder in table.items()}


def modules(folder: Path, name: str):
    """(module name, file) of every module of the package in ``folder``, its subpackages included
    (folders with an ``__init__.py``); ``__main__`` modules left out (importing one runs it)."""
    for path in sorted(folder.iterdir()):
        if path.is_dir() and (path / "__init__.py").is_file():
            yield from modules(path, f"{name}.{path.name}")
        elif path.suffix == ".py" and path.stem != "__main__":
            yield (name if path.stem == "__init__" else f"{name}.{path.stem}"), path


def declares_all(path: Path) -> bool:
    for node in ast.parse(path.read_text(), str(path)).body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets):
            return True
    return False


def public_modules() -> dict[str, Path]:
    """Every module that declares ``__all__``, by name."""
    return {module: path for name, folder in package_folders().items()
            for module, path in modules(folder, name) if declares_all(path)}


#: Top-level packages beside the adapters that only a stage of their own can import.
OWNED_BY_STAGE = {"gem_taskset": ("verifiers",)}


def owners(module: str, adapter_of: dict[str, str]) -> tuple[str, ...]:
    """The stages that own ``module``; ``adapter_of`` maps each adapter stage to its adapter."""
    parts = module.split(".")
    if parts[0] == "gem_adapters" and len(parts) > 1 and parts[1] in adapter_of.values():
        return tuple(stage for stage, adapter in adapter_of.items() if adapter == parts[1])
    return OWNED_BY_STAGE.get(parts[0], ("core",))


def check(module: str) -> list[str]:
    """What is wrong with ``module``'s ``__all__`` (nothing: an empty list)."""
    try:
        imported = importlib.import_module(module)
    except Exception as e:
        return [f"import {module} fails: {type(e).__name__}: {e}"]
    names = getattr(imported, "__all__", None)
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        return [f"{module}.__all__ is not a list of names: {names!r}"]
    problems = []
    for name in names:
        try:
            getattr(imported, name)
        except Exception as e:  # AttributeError, or what a lazy __getattr__ raised
            problems.append(f"{module}.__all__ lists {name!r}: {type(e).__name__}: {e}")
    if len(set(names)) != len(names):
        problems.append(f"{module}.__all__ lists a name twice")
    return problems


if __name__ == "__main__":
    print(json.dumps({module: check(module) for module in sys.argv[1:]}))

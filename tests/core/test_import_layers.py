"""The core reads bottom-up: its registry modules import one another in one direction only, with
no import (at module level or inside a function) going back up. Type-only imports do not count."""

from __future__ import annotations

import ast
from pathlib import Path

import gem_core

CORE = Path(gem_core.__file__).parent
#: Lowest first: each may import only modules listed before it.
LAYERS = ("errors", "core", "hookspecs", "registry", "components", "plugins")


def gem_core_imports(module: str) -> set[str]:
    """The gem_core modules that ``gem_core.<module>`` imports anywhere but under TYPE_CHECKING."""
    tree = ast.parse((CORE / f"{module}.py").read_text())
    type_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                 and getattr(block.test, "id", None) == "TYPE_CHECKING" for node in ast.walk(block)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gem_core"):
            names = [node.module] if node.module != "gem_core" else [f"gem_core.{a.name}" for a in node.names]
            found |= {name.split(".")[1] for name in names if "." in name}
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("gem_core.")}
    return found - {module}


def test_the_registry_modules_import_only_downwards():
    upward = {module: sorted(set(LAYERS[LAYERS.index(module):]) & gem_core_imports(module))
              for module in LAYERS}
    assert {module: up for module, up in upward.items() if up} == {}


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

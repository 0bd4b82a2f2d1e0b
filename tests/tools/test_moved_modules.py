"""The sandbox modules moved from gem_core.tools to gem_core.sandbox; the old names still import
the same module objects, with a DeprecationWarning."""

import json

from tests.helpers import run_python


def test_the_former_sandbox_module_names_are_the_moved_modules_and_warn():
    result = run_python("""
        import importlib, json, warnings
        moved = {"bubblewrap": "bubblewrap", "sandbox": "python", "warm_pool": "warm_pool", "warm_python": "warm_python"}
        seen = {}
        for old, new in moved.items():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                module = importlib.import_module(f"gem_core.tools.{old}")
            seen[old] = [module is importlib.import_module(f"gem_core.sandbox.{new}"),
                         [str(w.message) for w in caught if w.category is DeprecationWarning]]
        from gem_core.tools import bubblewrap
        from gem_core.tools.sandbox import Limits
        import gem_core.sandbox, gem_core.tools
        seen["from-import"] = [bubblewrap is gem_core.sandbox.bubblewrap, Limits is gem_core.sandbox.Limits,
                               gem_core.tools.warm_pool is gem_core.sandbox.warm_pool]
        print(json.dumps(seen))
    """)
    seen = json.loads(result.stdout)
    assert seen.pop("from-import") == [True, True, True]
    for old, (same, warned) in seen.items():
        assert same, old
        assert any(f"gem_core.tools.{old} moved to gem_core.sandbox." in w for w in warned), (old, warned)

"""The trainer moved from gem_adapters.local to gem_trainer; the old names still import the same
module objects, with one DeprecationWarning."""

import json

from tests.helpers import run_python


def test_every_former_module_name_is_the_moved_module_and_the_package_warns_once():
    result = run_python("""
        import importlib, json, pkgutil, sys, warnings
        import gem_trainer
        names = sorted(m.name for m in pkgutil.iter_modules(gem_trainer.__path__))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            same = {name: importlib.import_module(f"gem_adapters.local.{name}")
                          is importlib.import_module(f"gem_trainer.{name}") for name in names}
            import gem_adapters.local
            from gem_adapters.local.config import TrainConfig
            from gem_adapters.local import metrics
        seen = {
            "names": names,
            "same": same,
            "package": gem_adapters.local is gem_trainer,
            "from-import": [TrainConfig is gem_trainer.config.TrainConfig, metrics is gem_trainer.metrics],
            "own specs": [sys.modules[f"gem_trainer.{n}"].__spec__.name == f"gem_trainer.{n}" for n in names],
            "warnings": [str(w.message) for w in caught if w.category is DeprecationWarning],
        }
        print(json.dumps(seen))
    """)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert {"cli", "config", "evaluate", "models", "plugin", "trainer"} <= set(seen["names"])
    assert seen["same"] == {name: True for name in seen["names"]}
    assert seen["package"] and seen["from-import"] == [True, True]
    assert all(seen["own specs"])
    assert seen["warnings"] == ["gem_adapters.local moved to gem_trainer"]


def test_a_missing_module_under_the_former_name_is_still_missing():
    result = run_python("""
        import gem_adapters.local
        try:
            import gem_adapters.local.no_such_module
        except ModuleNotFoundError as e:
            print(e.name)
    """)
    assert result.stdout.strip() == "gem_adapters.local.no_such_module", result.stderr


def test_python_dash_m_runs_a_module_under_its_former_name():
    result = run_python("""
        import json, runpy, warnings
        warnings.simplefilter("ignore", DeprecationWarning)
        import gem_trainer.runtime
        namespace = runpy.run_module("gem_adapters.local.runtime", run_name="__main__")
        print(json.dumps([namespace["__file__"] == gem_trainer.runtime.__file__,
                          namespace["prefer_passive_openmp"].__module__]))
    """)
    assert json.loads(result.stdout) == [True, "__main__"], result.stderr

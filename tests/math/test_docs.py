"""The Environments page's example for these packs runs, and `gem envs` tells offline ids from downloads."""

import json

from tests.helpers import gem_command, python_blocks, run_python


def test_readme_example_runs():
    block = next(b for b in python_blocks("docs/environments.md") if "rg:composite" in b)
    done = run_python(block)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "1.0" and done.stdout.split()[1] in ("0.0", "1.0")


def test_gem_envs_shows_which_ids_need_a_download():
    done = gem_command("envs", "--json")
    assert done.returncode == 0, done.stderr
    offline = {row["id"]: row["offline"] for row in json.loads(done.stdout)}
    assert offline["math:GSM8K"] is False and offline["eval:AIME24"] is False
    assert offline["math:GSMSymbolic-v0"] is True and offline["rg:sudoku"] is True
    table = gem_command("envs", "math:GSM8K").stdout
    assert "download" in table

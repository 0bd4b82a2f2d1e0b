"""Every library bridge has the shape docs/adapters/writing-an-adapter.md states, and each former
module name is an alias of a module that exists (the alias imports are tested in each stage)."""

from __future__ import annotations

import re

from tests.helpers import REPO

LIBRARIES = ("verl", "openrlhf", "roll", "rl2", "oat", "trl")
ALIAS = re.compile(r'^alias_module\(__name__, "gem_adapters\.(\w+)\.(\w+)"\)$', re.M)


def shape_table() -> dict[str, str]:
    page = (REPO / "docs" / "adapters" / "writing-an-adapter.md").read_text()
    section = page.split("## The shape", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `([\w.]+)` \| (.+) \|$", section, re.M))


def test_every_adapter_has_the_modules_of_the_shape():
    table = shape_table()
    assert {"plugin.py", "cli.py", "config.py", "rollout.py", "advantages.py", "install.sh"} <= set(table)
    for library in LIBRARIES:
        folder = REPO / "adapters" / library
        launched_by_gem = library not in ("verl", "roll")  # verl and ROLL launch through their own entry
        expected = {name for name in table if name != "train.py" or launched_by_gem}
        missing = sorted(name for name in expected if not (folder / name).is_file())
        assert not missing, (library, missing)


def test_former_module_names_alias_modules_of_the_same_adapter():
    aliases = {}
    for path in sorted(path for library in LIBRARIES for path in (REPO / "adapters" / library).glob("*.py")):
        match = ALIAS.search(path.read_text())
        if match:
            aliases[f"{path.parent.name}.{path.stem}"] = ".".join(match.groups())
    assert aliases == {
        "verl.agent_loop": "verl.rollout", "verl.estimators": "verl.advantages",
        "openrlhf.agent": "openrlhf.rollout", "openrlhf.estimators": "openrlhf.advantages",
        "roll.bridge": "roll.rollout", "rl2.env": "rl2.rollout",
        "oat.actor": "oat.rollout", "oat.learner": "oat.advantages",
    }

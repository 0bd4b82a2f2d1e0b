"""Every library bridge has the shape docs/adapters/writing-an-adapter.md states."""

from __future__ import annotations

import re

from tests.helpers import REPO

LIBRARIES = ("verl", "openrlhf", "roll", "rl2", "oat", "trl")


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

"""docs/estimators.md's "Adding an estimator", done exactly as the page says: its code blocks become
an installed package whose plugin registers the estimator, and GEM then offers it everywhere."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from tests.helpers import REPO, gem_command, run_python


def page_blocks() -> dict[str, str]:
    """The section's code blocks, keyed by the file their first line names (``# mypackage/x.py``)."""
    page = (REPO / "docs" / "estimators.md").read_text()
    section = page.split("## Adding an estimator", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(?:python|toml)\n# (.+?)\n(.*?)```", section, re.S)
    return {name.strip(): code for name, code in blocks}


def install_the_pages_package(root: Path) -> Path:
    blocks = page_blocks()
    package = root / "mypackage"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name, code in blocks.items():
        if name.startswith("mypackage/"):
            (root / name).write_text(code)
    entry_points = tomllib.loads(blocks["pyproject.toml of mypackage"])["project"]["entry-points"]["gem"]
    info = root / "mypackage-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mypackage\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[gem]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
    return root


def test_an_estimator_registered_as_the_page_says_is_offered_everywhere(tmp_path):
    site = install_the_pages_package(tmp_path / "site")
    result = run_python("""
        import json
        import gem_core
        from gem_core.estimators import EstimatorInputError, estimate_flat
        from gem_adapters.common.estimators import estimator_names, needs_groups

        group_sign = gem_core.get_estimator("group_sign")
        rewards = [[0.0, 1.0], [0.0], [1.0], [0.5], [0.5]]
        advantages = group_sign(rewards, gamma=1.0, group_ids=["a", "a", "b", "b", "b"])
        refusals = []
        for group_ids in (None, ["a", "a", "b", "b", "c"]):
            try:
                group_sign(rewards, gamma=1.0, group_ids=group_ids)
            except EstimatorInputError as e:
                refusals.append(str(e))
        flat = estimate_flat("group_sign", [0.0, 1.0, 0.0], [2, 1], gamma=1.0, group_ids=[0, 0])
        print(json.dumps({"advantages": [a.tolist() for a in advantages], "refusals": refusals,
                          "flat": flat.tolist(), "group": needs_groups("group_sign"),
                          "library": estimator_names().get("gem_group_sign")}))
    """, path=[site])
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    # Group a: returns 1 and 0 around a mean of 0.5; group b: 1 above its mean of 2/3, both 0.5 below.
    assert seen["advantages"] == [[1.0, 1.0], [-1.0], [1.0], [-1.0], [-1.0]]
    assert len(seen["refusals"]) == 2 and "group_ids" in seen["refusals"][0]
    assert seen["flat"] == [1.0, 1.0, -1.0]
    assert seen["group"] is True and seen["library"] == "group_sign"

    listing = gem_command("plugins", "--verbose", path=[site])
    assert "group_sign" in listing.stdout
    refused = gem_command("train", "--estimator", "group_sign", "--group-size", "1", path=[site])
    assert refused.returncode != 0 and "--group-size" in refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr

"""The documentation site builds in MkDocs' strict mode (a broken link, anchor or nav entry, or a
page left out of the nav, fails it), and the README's links reach files that exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.helpers import REPO

pytest.importorskip("mkdocs", reason="the docs extra (MkDocs) is installed by scripts/install_test_deps.sh")


def test_the_site_builds_in_strict_mode(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    assert (tmp_path / "site" / "adapters" / "verl" / "index.html").is_file()


def test_the_readme_links_reach_files_in_the_repository():
    text = (REPO / "README.md").read_text()
    targets = {link.split("#")[0] for link in re.findall(r"\]\(([^)\s]+)\)", text)
               if not link.startswith(("http://", "https://", "#"))}
    assert "docs/getting-started.md" in targets
    missing = sorted(target for target in targets if not (REPO / target).exists())
    assert not missing, f"README.md links to missing files: {missing}"


def test_the_readme_starts_with_the_two_commands():
    lines = (REPO / "README.md").read_text().splitlines()
    assert lines[2] == "```bash" and lines[5] == "```"
    assert lines[3].startswith("pip install ") and lines[3].split("#")[0].rstrip().endswith("&& gem train")
    assert lines[4].startswith("bash scripts/install_test_deps.sh && bash scripts/test.sh")

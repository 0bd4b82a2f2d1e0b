"""One version: gem_core.__version__, which the package metadata, `gem --version` and the
changelog's newest release all show."""

import re
from importlib import metadata

import gem_core
from tests.helpers import REPO, gem_command


def test_the_changelogs_newest_release_is_the_package_version():
    changelog = (REPO / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", changelog, re.M)
    assert releases, "CHANGELOG.md has no release heading (## [X.Y.Z] - YYYY-MM-DD)"
    assert releases[0][0] == gem_core.__version__
    assert changelog.index("## [Unreleased]") < changelog.index(f"## [{gem_core.__version__}]")


def test_gem_version_prints_the_installed_version():
    assert metadata.version("gem-adapters") == gem_core.__version__
    result = gem_command("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"gem, version {gem_core.__version__}"

"""The README shows the environment API first (every example of README.md and docs/ runs in
tests/docs)."""

from tests.helpers import python_blocks


def test_the_readme_shows_the_env_api_example():
    assert any(b.startswith("import gem_core") and "gem_core.make(" in b for b in python_blocks("README.md"))

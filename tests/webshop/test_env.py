"""WebShop on the shipped sample and on generated catalogues in upstream's file format."""

from __future__ import annotations

import json
import shutil

import pytest

import gem_core
from bench.workloads.webshop import generate_catalogue
from gem_core.errors import DataNotFoundError, GemError
from gem_envs.webshop.env import parse_action
from gem_envs.webshop.files import WebShopDataError, stream_json
from gem_envs.webshop.plugin import SAMPLE_DIR

MODES = ("text", "text_rich", "html")


def buy_the_goal(env, search=None):
    """Search the goal's product by name, open it, choose the goal's options and buy."""
    goal = env.goal
    observation, *_ = env.step(f"search[{search or goal['name']}]")
    assert goal["asin"] in observation or goal["asin"].lower() in observation
    env.step(f"\\boxed{{click[{goal['asin']}]}}")
    for option in goal["goal_options"]:
        assert env.step(f"click[{option}]")[4].get("invalid_action") is None, option
    return env.step("click[Buy Now]")


def test_every_sample_goal_is_reachable_with_full_reward():
    env = gem_core.make("webshop:sample-text")
    assert len(env.goals) >= 10
    for index in range(len(env.goals)):
        env.reset(index=index)
        observation, reward, terminated, truncated, info = buy_the_goal(env)
        assert (reward, terminated, truncated, info["success"]) == (1.0, True, False, True), env.goal
        assert info["asin"] == env.goal["asin"] and "Your score (min 0.0, max 1.0) [SEP] 1" in observation


def test_pages_and_clickables_follow_upstream():
    env = gem_core.make("webshop:sample-text")
    observation, info = env.reset(index=0)
    assert observation.endswith("[SEP] Search") and info["available_actions"] == {"has_search_bar": True, "clickables": []}
    observation, _, _, _, info = env.step("search[deodorant]")
    assert "Back to Search [SEP] Page 1 (Total results:" in observation and info["page"] == "results"
    first = info["available_actions"]["clickables"][1]
    observation, _, _, _, info = env.step(f"click[{first}]")
    clickables = info["available_actions"]["clickables"]
    assert {"back to search", "< prev", "description", "features", "reviews", "buy now"} <= set(clickables)
    assert "Price: $" in observation and "Rating: N.A." in observation
    observation, *_ = env.step("click[Features]")
    assert env.page == "detail" and "[SEP] < Prev [SEP]" in observation
    env.step("click[< prev]")
    assert env.page == "item"
    env.step("click[< Prev]")
    assert env.page == "results"
    env.step("click[back to search]")
    assert env.page == "search"
    _, reward, _, _, info = env.step("click[buy now]")  # not on this page
    assert info["invalid_action"] and reward == -0.1


def test_results_pages_of_ten(tmp_path):
    folder = generate_catalogue(tmp_path / "shop", 60)
    env = gem_core.make("webshop:train-text", data_dir=str(folder))
    env.reset(seed=0)
    observation, *_, info = env.step("search[lamp shirt shoe tea shampoo deodorant bag bottle chair pillow]")
    total = len(env.results)
    assert 10 < total <= 50 and f"(Total results: {total})" in observation
    assert len([c for c in info["available_actions"]["clickables"] if c.startswith("b0")]) == 10
    observation, *_, info = env.step("click[next >]")
    assert "Page 2" in observation and "< prev" in info["available_actions"]["clickables"]
    env.step("click[< prev]")
    assert env.result_page == 1


@pytest.mark.parametrize("mode", MODES)
def test_the_contract_holds_and_sampled_actions_parse_in_every_mode(mode):
    gem_core.check_env(f"webshop:sample-{mode}", steps=80, warn=False)  # seeded replay, global random untouched
    env = gem_core.make(f"webshop:sample-{mode}")
    env.reset(seed=3)
    for _ in range(80):
        action = env.sample_random_action()
        assert parse_action(action)[0] is not None, action
        if any(env.step(action)[2:4]):
            env.reset()


@pytest.mark.parametrize("action", ["", "search[]", "search[   ]", "click[]", "click[nothing here]", "buy",
                                    "\\boxed{click[", "search[" + "shoe " * 50_000 + "]", "\x00\ud800",
                                    "\\boxed{search[tea]} \\boxed{click[x]}", "SEARCH [green tea]", None, 42])
def test_every_action_string_gets_a_transition(action):
    env = gem_core.make("webshop:sample-text_rich")
    env.reset(seed=1)
    observation, reward, terminated, truncated, info = env.step(action)
    assert isinstance(observation, str) and reward in (0.0, -0.1) and not terminated
    assert info["turn"] == 1


def test_action_forms():
    assert parse_action("I will search. \\boxed{search[Green Tea]}") == ("search", "Green Tea")
    assert parse_action("click[Buy Now]") == ("click", "buy now")
    assert parse_action("\\boxed{click[a]} then click[b]") == ("click", "a")
    assert parse_action("search[a] and more") == (None, None)


def test_errors_end_the_episode_past_the_tolerance_and_turns_truncate():
    env = gem_core.make("webshop:sample-text", error_tolerance=1, format_error_reward=-0.5)
    env.reset(seed=0)
    assert env.step("nonsense")[1:4] == (-0.5, False, False)
    assert env.step("nonsense")[1:4] == (-0.5, True, False)
    env = gem_core.make("webshop:sample-text", max_turns=2)
    env.reset(seed=0)
    env.step("search[tea]")
    _, _, terminated, truncated, info = env.step("search[tea]")
    assert truncated and not terminated and info["success"] is False


def test_clone_plays_apart():
    env = gem_core.make("webshop:sample-text")
    env.reset(index=2)
    env.step("search[shoes]")
    twin = env.clone()
    env.step("click[back to search]")
    assert twin.page == "results" and env.page == "search"


def test_splits_and_goals_follow_upstreams_rules(tmp_path):
    folder = generate_catalogue(tmp_path / "shop", 2100)
    train = gem_core.make("webshop:train-text", data_dir=str(folder))
    test = gem_core.make("webshop:test-html", data_dir=str(folder))
    assert (train.goals, test.goals) == (range(1500, 2100), range(0, 500))
    test.reset(index=0)
    goal = test.goal
    assert goal["instruction_text"].endswith("dollars") and goal["price_upper"] > test.shop.price(goal["asin"])
    synthetic = gem_core.make("webshop:train-text", data_dir=str(folder), human_goals=False)
    synthetic.reset(seed=0)
    assert " with color: " in synthetic.goal["instruction_text"] and isinstance(synthetic.goal["goal_options"], dict)


def test_database_and_index_are_built_once_beside_the_data(tmp_path):
    folder = generate_catalogue(tmp_path / "shop", 30)
    gem_core.make("webshop:train-text", data_dir=str(folder))
    built = folder / "items_shuffle.json.gem"
    stamp = (built / "ready.json").stat().st_mtime_ns
    from gem_envs.webshop import store
    store._open_cached.cache_clear()
    gem_core.make("webshop:train-text", data_dir=str(folder))
    assert (built / "ready.json").stat().st_mtime_ns == stamp  # reused, not rebuilt
    products = json.loads((folder / "items_shuffle.json").read_text())
    products[0]["name"] = "Renamed Lamp"
    (folder / "items_shuffle.json").write_text(json.dumps(products))
    env = gem_core.make("webshop:train-text", data_dir=str(folder))
    assert env.shop.product(products[0]["asin"])["Title"] == "Renamed Lamp"  # a changed file is rebuilt


def test_a_read_only_data_folder_builds_in_the_user_cache(tmp_path, monkeypatch):
    folder = generate_catalogue(tmp_path / "shop", 20)
    monkeypatch.delenv("GEM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from gem_envs.webshop import store
    monkeypatch.setattr(store, "_writable", lambda folder: False)  # as root, permissions would not stop a write
    env = gem_core.make("webshop:train-text", data_dir=str(folder))
    assert str(env.shop.folder).startswith(str(tmp_path / "cache"))


def test_bad_data_paths_are_named(tmp_path, monkeypatch):
    monkeypatch.delenv("GEM_WEBSHOP_DATA", raising=False)
    with pytest.raises(DataNotFoundError, match="data_dir="):
        gem_core.make("webshop:train-text")
    with pytest.raises(DataNotFoundError, match="nowhere"):
        gem_core.make("webshop:train-text", data_dir=str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataNotFoundError, match="items_shuffle"):
        gem_core.make("webshop:train-text", data_dir=str(tmp_path / "empty"))
    folder = tmp_path / "broken"
    shutil.copytree(SAMPLE_DIR, folder, ignore=shutil.ignore_patterns("*.gem", "*.py", "__pycache__"))
    (folder / "items_shuffle_sample.json").write_text('{"not": "a list"}')
    with pytest.raises(WebShopDataError, match="items_shuffle_sample.json"):
        gem_core.make("webshop:train-text", data_dir=str(folder))
    (folder / "items_shuffle_sample.json").write_text('[{"asin": "B1"}, ')
    with pytest.raises(WebShopDataError, match="items_shuffle_sample.json"):
        gem_core.make("webshop:train-text", data_dir=str(folder))
    monkeypatch.setenv("GEM_WEBSHOP_DATA", str(tmp_path / "elsewhere"))
    with pytest.raises(DataNotFoundError, match="elsewhere"):
        gem_core.make("webshop:test-text")
    with pytest.raises(GemError, match="observation_mode"):
        gem_core.make("webshop:sample-text", observation_mode="pdf")
    with pytest.raises(GemError, match="out of range"):
        gem_core.make("webshop:sample-text").reset(index=10_000)


def test_stream_json_reads_arrays_and_objects_in_chunks(tmp_path, monkeypatch):
    from gem_envs.webshop import files
    monkeypatch.setattr(files, "_CHUNK", 5)
    for data in ([], {}, [1, 22.5, {"a": [1, "x" * 40]}], {"k": [1, 2], "b": {"c": "d" * 30}}, [1234567890123]):
        path = tmp_path / "data.json"
        path.write_text(json.dumps(data, indent=2))
        assert list(stream_json(path)) == (list(data.items()) if isinstance(data, dict) else data)

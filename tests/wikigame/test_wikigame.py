"""WikiGame on a ZIM file built by libzim's writer, and on a stub MediaWiki API (127.0.0.1)."""

from __future__ import annotations


import pytest

import gem_core
from gem_core.errors import DataNotFoundError, GemError
from gem_envs.wikigame.env import WikiGameSettingsError, WikiReward
from gem_envs.wikigame.pages import WikiBackendError
from tests.wikigame.wiki import LINKS, shortest_path

PYTHON, AI = "Python (programming language)", "Artificial intelligence"


def make(zim_file, variant="noregrets", **kwargs):
    return gem_core.make("game:WikiGame-v0-easy", zim_path=str(zim_file), variant=variant, **kwargs)


def box(title):
    return f"I pick \\boxed{{{title}}}"


def test_links_read_from_the_zim_are_the_articles_links(zim_file):
    env = make(zim_file)
    for title, links in LINKS.items():
        page = env.source.page(title)
        assert page.title == title and page.links == tuple(links), title  # no navbox, reference, red link
        assert "about" in page.text and "References" not in page.text
    assert env.source.page("Guido").title == "Guido van Rossum"  # a redirect
    assert env.source.page("guido_van_Rossum").title == "Guido van Rossum"
    assert env.source.page("No such article") is None and env.source.page("") is None


@pytest.mark.parametrize("start,target", [(PYTHON, "London"), ("RSA algorithm", "Statistics"),
                                          ("Comedy", "Switzerland"), ("Electricity", "Netherlands")])
def test_the_shortest_path_wins_in_as_many_turns(zim_file, start, target):
    path = shortest_path(start, target)
    env = make(zim_file)
    env.reset(seed=0, start=start, target=target)
    rewards = []
    for title in path[1:]:
        observation, reward, terminated, truncated, info = env.step(box(title))
        rewards.append(reward)
    assert terminated and not truncated and info["success"] and "Congratulations" in observation
    assert env.turn == len(path) - 1
    assert rewards == [WikiReward.STEP] * (len(path) - 2) + [WikiReward.SUCCESS]


def test_moves_invalid_titles_and_format_errors(zim_file):
    env = make(zim_file)
    env.reset(start=PYTHON, target=AI)
    observation, reward, terminated, truncated, info = env.step(box("Guido_van_Rossum"))
    assert env.current_page.title == "Guido van Rossum" and reward == WikiReward.STEP
    assert not (terminated or truncated) and "Guido van Rossum" in observation
    assert "\\boxed{Netherlands}" in info["suffix"] and info["page"] == "Guido van Rossum"
    _, reward, terminated, _, info = env.step(box("Alan Turing"))  # exists, but not linked here
    assert reward == WikiReward.INVALID and info["invalid_move"] and not terminated
    assert env.current_page.title == "Guido van Rossum"
    observation, reward, terminated, _, info = env.step("Netherlands")
    assert reward == WikiReward.FORMAT_ERROR and info["format_error"] and not terminated
    assert "Did you mean 'Netherlands'" in env.step(box("nether"))[0]
    assert env.step(box("<PREV_PAGE>"))[1] == WikiReward.INVALID  # noregrets
    assert env.turn == 5


def test_dead_end_ends_noregrets_and_bounces_back_in_oneback(zim_file):
    env = make(zim_file)
    env.reset(start="Euler's totient function", target=AI)
    _, reward, terminated, truncated, info = env.step(box("Unit (ring theory)"))
    assert terminated and not truncated and reward == WikiReward.FAIL and info["success"] is False
    for variant in ("oneback", "freenav"):
        env = make(zim_file, variant)
        env.reset(start="RSA algorithm", target=AI)
        env.step(box("Euler's totient function"))
        _, reward, terminated, _, _ = env.step(box("Unit (ring theory)"))
        assert not terminated and reward == 2 * WikiReward.STEP and env.turn == 3 and env.backtracked
        assert env.current_page.title == "Euler's totient function"
        _, reward, *_ = env.step(box("<PREV_PAGE>"))
        assert (env.current_page.title, reward) == (
            ("Euler's totient function", WikiReward.INVALID) if variant == "oneback" else ("RSA algorithm", WikiReward.STEP))


def test_going_back_once_in_a_row_or_freely(zim_file):
    for variant, second_back in (("oneback", "Guido van Rossum"), ("freenav", PYTHON)):
        env = make(zim_file, variant)
        env.reset(start=PYTHON, target=AI)
        assert env.step(box("<PREV_PAGE>"))[1] == WikiReward.INVALID  # nowhere to go back to
        env.step(box("Guido van Rossum"))
        env.step(box("Programmer"))
        assert env.step(box("<PREV_PAGE>"))[1] == WikiReward.STEP
        env.step(box("<PREV_PAGE>"))
        assert env.current_page.title == second_back, variant


def test_eidetic_reaches_any_link_seen_before(zim_file):
    env = make(zim_file, "eidetic")
    env.reset(start=PYTHON, target="Alan Turing")
    env.step(box("Guido van Rossum"))
    _, reward, *_ = env.step(box("Monty Python"))  # linked from the start page only
    assert reward == WikiReward.STEP and env.current_page.title == "Monty Python"
    assert make(zim_file).reset(start=PYTHON, target=AI) and True


def test_turn_limit_truncates(zim_file):
    env = make(zim_file, max_turns=2)
    env.reset(start=PYTHON, target="London")
    assert env.step(box("Software"))[2:4] == (False, False)
    observation, reward, terminated, truncated, info = env.step(box("Computer"))
    assert truncated and not terminated and reward == WikiReward.FAIL and info["success"] is False
    assert "all 2 turns" in observation


def test_the_contract_holds_and_sampled_actions_are_well_formed(zim_file):
    gem_core.check_env(lambda: make(zim_file, "freenav"), steps=60, warn=False)  # seeded replay, global random untouched
    env = make(zim_file, "freenav")
    env.reset(seed=5)
    for _ in range(60):
        observation, reward, terminated, truncated, info = env.step(env.sample_random_action())
        assert not info.get("format_error"), observation
        if terminated or truncated:
            env.reset()


@pytest.mark.parametrize("action", ["", "\\boxed{}", "\\boxed{" + "x" * 10_000 + "}", "\\boxed{\\boxed{",
                                    "}{\\boxed{Guido}}", "\x00\ud800", "<PREV_PAGE>", "\\boxed{ <PREV_PAGE> }",
                                    "click[Guido]", "\\boxed{Python (programming language)}"])
def test_every_action_string_gets_a_transition(zim_file, action):
    env = make(zim_file, "oneback")
    env.reset(start=PYTHON, target=AI)
    observation, reward, terminated, truncated, info = env.step(action)
    assert isinstance(observation, str) and reward in (WikiReward.INVALID, WikiReward.FORMAT_ERROR, WikiReward.STEP)
    assert info["turn"] == 1 and not terminated


def test_clone_plays_apart(zim_file):
    env = make(zim_file)
    env.reset(seed=3, start=PYTHON, target=AI)
    twin = env.clone()
    env.step(box("Software"))
    assert twin.current_page.title == PYTHON and twin.step(box("Guido van Rossum"))[1] == WikiReward.STEP


def test_bad_data_paths_and_settings_are_named(tmp_path, monkeypatch, zim_file):
    with pytest.raises(DataNotFoundError, match="nowhere.zim"):
        gem_core.make("game:WikiGame-v0-easy", zim_path=str(tmp_path / "nowhere.zim"))
    with pytest.raises(DataNotFoundError, match="zim_path="):
        gem_core.make("game:WikiGame-v0-hard")
    not_zim = tmp_path / "fake.zim"
    not_zim.write_text("hello")
    with pytest.raises(GemError, match="fake.zim"):
        gem_core.make("game:WikiGame-v0-easy", zim_path=str(not_zim))
    with pytest.raises(WikiGameSettingsError, match="variant"):
        make(zim_file, "sideways")
    with pytest.raises(WikiGameSettingsError, match="backend"):
        gem_core.make("game:WikiGame-v0-easy", backend="carrier-pigeon")
    with pytest.raises(GemError, match="no article 'Atlantis'"):
        make(zim_file).reset(start="Atlantis", target=AI)
    # the reference's spelling: a kiwix zimfile name, found in $GEM_ZIM_DIR, read with no server
    monkeypatch.setenv("GEM_ZIM_DIR", str(zim_file.parent))
    env = gem_core.make("game:WikiGame-v0-hard", backend="kiwix",
                        trawler_kwargs={"url": "http://localhost:8080", "zimfile": zim_file.stem})
    assert env.reset(seed=1)[0] and env.max_turns == 15
    with pytest.raises(DataNotFoundError, match="GEM_ZIM_DIR"):
        gem_core.make("game:WikiGame-v0-hard", backend="kiwix", trawler_kwargs={"zimfile": "absent"})


def test_mediawiki_backend_follows_continuations_redirects_and_caches(mediawiki):
    env = gem_core.make("game:WikiGame-v0-easy", backend="mw", url=mediawiki.url, delay_ms=0)
    env.reset(start="Guido", target=AI)  # a redirect
    assert env.start_page.title == "Guido van Rossum"
    assert env.start_page.links == tuple(LINKS["Guido van Rossum"])  # 3 links over 2 answers
    sent = len(mediawiki.requests)
    env.reset(start="Guido van Rossum", target=AI)
    assert len(mediawiki.requests) == sent  # both pages cached
    assert all(q["format"] == "json" and q["action"] == "query" for q in mediawiki.requests)
    env.step(box("Netherlands"))
    assert env.current_page.title == "Netherlands"
    observation, info = env.reset(seed=0)  # random pages come from list=random
    assert {env.start_page.title, env.target_page.title} == {"Computer", "Europe"}


def test_mediawiki_backend_retries_then_names_the_failure(mediawiki):
    env = gem_core.make("game:WikiGame-v0-easy", backend="mw", url=mediawiki.url, delay_ms=0)
    mediawiki.fail_next = 1
    env.reset(start=PYTHON, target=AI)  # one 503, then an answer
    mediawiki.fail_next = 10
    with pytest.raises(WikiBackendError, match="HTTP 503"):
        env.source.page("Computer")
    mediawiki.fail_next = 0
    dead = gem_core.make("game:WikiGame-v0-easy", backend="mw", url="http://127.0.0.1:9/w/api.php", delay_ms=0)
    with pytest.raises(WikiBackendError, match="127.0.0.1:9"):
        dead.reset(start=PYTHON, target=AI)

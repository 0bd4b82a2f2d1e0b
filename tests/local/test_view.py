"""`gem view`: the page of an evaluation and of a training run, loaded in a real headless Chromium."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gem_core import GemError
from gem_trainer.viewing.page import write_view
from tests.browser import CHROMIUM, HeadlessChromium
from tests.helpers import REPO, gem_command

FIXTURE = REPO / "tests" / "fixtures" / "eval-run"
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (scripts/install_test_deps.sh)")


def fixture_lines() -> list[dict]:
    return [json.loads(line) for line in (FIXTURE / "episodes.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def browser():
    with HeadlessChromium() as running:
        yield running


@pytest.fixture(scope="module")
def training_run(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from gem_trainer.config import build_config
    from gem_trainer.training.rollout import step_seeds
    from gem_trainer.training.trainer import Trainer
    from tests.local.envs import BROKEN_ID, register_broken

    # LetterShare (rewards that differ, so advantages are not all 0) whose first episode of step 1 fails
    register_broken(step_seeds(0, 1, 4, 1)[:1])
    out = tmp_path_factory.mktemp("train") / "run"
    Trainer(build_config({"model": str(tiny_model_dir), "envs": [BROKEN_ID], "steps": 2, "episodes_per_step": 4,
                          "max_new_tokens": 4, "device": "cpu", "threads": 1, "output_dir": str(out)}),
            progress=False).run()
    register_broken([])
    return out


@needs_chromium
def test_the_page_of_an_evaluation_shows_its_episodes_in_a_real_browser(browser: HeadlessChromium, tmp_path: Path):
    result = gem_command("view", str(FIXTURE), "--output", str(tmp_path / "view.html"), "--no-open")
    assert result.returncode == 0, result.stderr
    page = tmp_path / "view.html"
    browser.open(page.as_uri())
    expected = fixture_lines()
    assert browser.evaluate("document.querySelectorAll('.episode').length") == len(expected)
    assert browser.evaluate("document.getElementById('count').textContent") == f"{len(expected)} of {len(expected)} episodes"
    assert "smollm2" in browser.evaluate("document.getElementById('title').textContent")

    browser.evaluate("document.querySelector('.episode .head').click()")  # open the first episode's transcript
    first = expected[0]
    actions = browser.evaluate("[...document.querySelectorAll('.turns pre.action')].map(p => p.textContent)")
    assert actions == [turn["action"] for turn in first["turns"]]
    shown = browser.evaluate("document.querySelector('.turns pre.observation').textContent")
    assert "Guess The Number" in shown

    won = sum(line["turns"][-1]["info"]["success"] for line in expected)
    format_errors = sum(line["turns"][-1]["info"]["format_error"] for line in expected)
    for outcome, count in (("success", won), ("format_error", format_errors), ("lost", len(expected) - won - format_errors),
                           ("failed", 0)):
        browser.evaluate(f"(s => {{ s.value = '{outcome}'; s.dispatchEvent(new Event('change')); }})"
                         "(document.getElementById('outcome-filter'))")
        assert browser.evaluate("document.querySelectorAll('.episode').length") == count, outcome
    screenshot = browser.screenshot(tmp_path / "view.png")
    print(f"screenshot of the page: {screenshot}")
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert browser.errors == []


@needs_chromium
def test_an_action_that_writes_html_stays_text(browser: HeadlessChromium, tmp_path: Path):
    hostile = '</script><script>document.title = "taken"</script><!--<script> <img src=x onerror=alert(1)>'
    folder = tmp_path / "eval"
    shutil.copytree(FIXTURE, folder)
    lines = fixture_lines()
    lines[0]["turns"][0]["action"] = hostile
    (folder / "episodes.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    browser.open(write_view(folder).as_uri())
    browser.evaluate("document.querySelector('.episode .head').click()")
    assert browser.evaluate("document.querySelector('.turns pre.action').textContent") == hostile
    assert browser.evaluate("document.title") != "taken" and browser.evaluate("document.images.length") == 0
    assert browser.errors == []


@needs_chromium
def test_the_page_of_a_training_run_shows_each_turns_advantage(browser: HeadlessChromium, training_run: Path,
                                                                tmp_path: Path):
    from gem_core import get_estimator
    from gem_core.episodes import load_episodes

    page = write_view(training_run, tmp_path / "train.html")
    browser.open(page.as_uri())
    played = [e for step in (1, 2) for e in load_episodes(training_run / "episodes" / f"step-{step:05d}.jsonl")]
    assert browser.evaluate("document.querySelectorAll('.episode').length") == len(played)
    assert browser.evaluate("document.querySelectorAll('#plots img').length") == 1  # the learning curve
    browser.evaluate("(s => { s.value = '2'; s.dispatchEvent(new Event('change')); })(document.getElementById('step-filter'))")
    step_two = [e for e in played[len(played) // 2:]]
    assert browser.evaluate("document.querySelectorAll('.episode').length") == len(step_two)
    browser.evaluate("document.querySelector('.episode .head').click()")
    shown = browser.evaluate("[...document.querySelectorAll('.turn:not(.final) .meta')].map(m => m.textContent)")
    expected = get_estimator("rebn")([e.rewards for e in step_two], gamma=0.9)[0]
    assert len(shown) == len(expected) and all(f"advantage {a:+.3f}" in text for a, text in zip(expected, shown))
    browser.screenshot(tmp_path / "train.png")
    assert browser.errors == []


@needs_chromium
def test_a_failed_episode_shows_as_failed_with_its_kind_and_error(browser: HeadlessChromium, training_run: Path,
                                                                  tmp_path: Path):
    from gem_core.episodes import load_episodes

    [failed] = [e for e in load_episodes(training_run / "episodes" / "step-00001.jsonl") if not e.valid]
    browser.open(write_view(training_run, tmp_path / "train.html").as_uri())
    browser.evaluate("(s => { s.value = 'failed'; s.dispatchEvent(new Event('change')); })"
                     "(document.getElementById('outcome-filter'))")
    assert browser.evaluate("document.querySelectorAll('.episode').length") == 1
    head = browser.evaluate("document.querySelector('.episode .head').textContent")
    assert "failed: malformed" in head and f"seed {failed.seed}" in head and "return -" in head
    assert browser.evaluate("document.querySelector('.episode .outcome').className") == "outcome failed"
    browser.evaluate("document.querySelector('.episode .head').click()")
    note = browser.evaluate("document.querySelector('.failure-note').textContent")
    assert "Failed (malformed) in step(), after 1 turn(s)" in note and "reward of nan" in note
    assert "left out of the statistics and of training" in note
    metas = browser.evaluate("[...document.querySelectorAll('.turn:not(.final) .meta')].map(m => m.textContent)")
    assert len(metas) == 2 and not any("advantage" in m for m in metas)  # it was not trained on
    summary = browser.evaluate("document.getElementById('summary').textContent")
    assert "failed" in summary and "25.0%" in summary  # step 1: one of four
    assert browser.errors == []


def test_the_page_of_an_evaluation_counts_failed_episodes_apart(tmp_path: Path):
    from gem_core.episodes import Failure

    folder = tmp_path / "eval"
    shutil.copytree(FIXTURE, folder)
    lines = fixture_lines()
    lines[0]["failure"] = {"kind": "sandbox", "error": "SandboxFailure: the container died", "phase": "step", "turn": 0}
    assert Failure(**lines[0]["failure"])
    (folder / "episodes.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    text = write_view(folder).read_text()
    data = json.loads(text[text.index('id="gem-data">') + len('id="gem-data">'):text.index("</script>")])
    assert data["episodes"][0]["failed"]["kind"] == "sandbox" and data["episodes"][0]["success"] is False
    [row] = data["summary"]
    assert row["failed"] == "1 (8.3%)" and row["episodes"] == len(lines) - 1


def test_view_names_a_folder_that_is_not_a_run(tmp_path: Path):
    with pytest.raises(GemError, match="neither a `gem eval` folder"):
        write_view(tmp_path)
    result = gem_command("view", str(tmp_path), "--no-open")
    assert result.returncode != 0 and "Traceback" not in result.stderr


def test_images_of_a_visual_task_come_from_replaying_its_episodes(tmp_path: Path):
    pytest.importorskip("PIL")
    import gem_core
    from gem_core.episodes import Episode, Turn

    env = gem_core.make("vision:DigitArithmetic-v0")
    observation, info = env.reset(seed=3)
    _, reward, terminated, truncated, step_info = env.step("\\boxed{0}")
    episode = Episode("vision:DigitArithmetic-v0", 3, [Turn(observation, "\\boxed{0}", reward, terminated, truncated,
                                                            step_info)])
    folder = tmp_path / "eval"
    shutil.copytree(FIXTURE, folder)
    (folder / "episodes.jsonl").write_text(json.dumps({**episode.to_dict(), "sample": 0}, default=repr) + "\n")
    lied = Episode(episode.env_id, 3, [Turn(observation, "\\boxed{0}", reward + 1.0, terminated, truncated)])
    (folder / "episodes.jsonl").open("a").write(json.dumps({**lied.to_dict(), "sample": 1}) + "\n")
    text = write_view(folder).read_text()
    data = json.loads(text[text.index('id="gem-data">') + len('id="gem-data">'):text.index("</script>")])
    first, second = data["episodes"]
    assert len(first["turns"][0]["images"]) == len(info["images"]) >= 1
    assert first["turns"][0]["images"][0].startswith("data:image/png;base64,")
    assert second["turns"][0]["images"] == [] and any("earned" in note for note in data["notes"])

"""Failed episodes in `gem train`: an environment that returns a NaN reward fails those episodes
alone and the run goes on; a step whose episodes all failed makes no update and loses nothing;
more than ``max_failed_share`` failed stops the run with what failed named and the steps trained
so far in its checkpoint; a self-play episode that failed trains neither seat; the failed share
by kind and environment is in every record and the step line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import torch

from gem_core.episodes import Episode, Failure, Turn, load_episodes
from gem_trainer.config import ConfigError
from gem_trainer.metrics import TIMINGS, failure_report, failure_shares, failures_text
from gem_trainer.training.checkpoint import MODEL, load_trainer_state
from gem_trainer.training.rollout import step_seeds
from gem_trainer.training.trainer import EPISODES_DIR, FailedEpisodesError, Trainer
from tests.helpers import run_python
from tests.local.envs import BROKEN_DILEMMA_ID, BROKEN_ID, register_broken, register_broken_dilemma_once
from tests.local.test_trainer import config, weights

EPISODES = 4


@pytest.fixture(autouse=True)
def _broken_env():
    register_broken([])  # each test breaks the seeds it needs
    yield
    register_broken([])


def seeds_of(step: int) -> list[int]:
    """The episode seeds `gem train` plays at ``step`` (seed 0, no groups)."""
    return step_seeds(0, step, EPISODES, 1)


def comparable(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMINGS} for r in records]


def test_a_nan_reward_fails_that_episode_alone_and_the_run_goes_on(tiny_model_dir, tmp_path):
    from rich.console import Console

    broken = seeds_of(1)[1]
    register_broken([broken])
    output = io.StringIO()
    result = Trainer(config(tiny_model_dir, tmp_path / "run", envs=[BROKEN_ID], steps=2), progress=True,
                     console=Console(file=output, width=400)).run()

    first, second = result.records
    episodes = load_episodes(result.output_dir / EPISODES_DIR / "step-00001.jsonl")
    [failed] = [e for e in episodes if not e.valid]
    assert failed.seed == broken and failed.failure.kind == "malformed" and "nan" in failed.failure.error
    assert failed.num_turns == 2  # its first turn looked fine: it is not trained either
    assert first["failed_rate"] == first["failed_malformed"] == first[f"failed_malformed/{BROKEN_ID}"] == 0.25
    assert first[f"failed_rate/{BROKEN_ID}"] == 0.25
    assert first["turns_trained"] == 6 and first["turns_skipped"] == 2 and first["updated"] is True
    valid = [e for e in episodes if e.valid]
    assert first["mean_return"] == pytest.approx(sum(e.total_reward for e in valid) / 3)
    assert second["failed_rate"] == 0.0 and "failed_malformed" not in second and second["turns_trained"] == 8
    said = output.getvalue()
    assert "step 1: " in said and "failed 25.0% (malformed 25.0%)" in said
    assert said.count("failed 25.0%") == said.count("step 1: return")  # step 2 had no failure


def test_a_step_whose_episodes_all_failed_makes_no_update_and_loses_nothing(tiny_model_dir, tmp_path):
    register_broken(seeds_of(2))
    run = tmp_path / "run"
    result = Trainer(config(tiny_model_dir, run, envs=[BROKEN_ID], steps=3, max_failed_share=1.0, save_every=2),
                     progress=False).run()

    first, second, third = result.records
    assert second["failed_rate"] == 1.0 and second["updated"] is False
    assert second["no_update"] == "all 4 episodes failed"
    assert second["turns_trained"] == 0 and second["loss"] == 0.0 and second["grad_norm"] == 0.0
    assert second["mean_return"] is None and second["success_rate"] is None  # nothing to take them over
    assert second["advantage_std"] == 0.0
    assert first["updated"] and third["updated"] and third["turns_trained"] == 8
    state = load_trainer_state(run)
    assert state.step == 3  # the step counter counts the step
    assert {float(s["step"]) for s in state.optimizer["state"].values()} == {2.0}  # two optimiser steps, not three
    assert result.plot_path.is_file()

    register_broken([])
    resumed = Trainer(config(tiny_model_dir, run, envs=[BROKEN_ID], steps=4, max_failed_share=1.0, save_every=2),
                      resume=run, progress=False).run()
    assert [r["step"] for r in resumed.records] == [1, 2, 3, 4] and resumed.records[-1]["updated"]
    assert load_trainer_state(run).step == 4


def test_more_failures_than_the_share_allows_stop_the_run_with_the_steps_trained_so_far_saved(tiny_model_dir,
                                                                                              tmp_path):
    """The stop is run as `gem train` runs it (a process of its own, the command line's message);
    the fixed environment's resume then equals a run that never failed."""
    straight = Trainer(config(tiny_model_dir, tmp_path / "straight", envs=[BROKEN_ID], steps=2), progress=False).run()

    run = tmp_path / "run"
    stopped = run_python("""
        import sys
        from tests.local.envs import register_broken
        register_broken([int(s) for s in sys.argv[1].split(",")])
        from gem_core.cli import main
        main(sys.argv[2:])
    """, timeout=300, argv=[",".join(map(str, seeds_of(2)[:3])), "train", "--model", str(tiny_model_dir),
                            "--env", BROKEN_ID, "--steps", "2", "--episodes-per-step", str(EPISODES),
                            "--max-new-tokens", "6", "--lr", "1e-3", "--device", "cpu", "--no-lora",
                            "--micro-batch-tokens", "256", "--threads", "1", "--output-dir", str(run), "--no-progress"])
    assert stopped.returncode == 1 and "Traceback" not in stopped.stderr, stopped.stderr[-3000:]
    message = " ".join(stopped.stderr.split())
    assert "Step 2: 3 of 4 episodes failed, more than --max-failed-share 0.5 allows" in message
    assert f"{BROKEN_ID}: 3 of 4 failed: 3 malformed" in message and "reward of nan" in message
    assert "holds step 1" in message and f"gem train --resume {run}" in message
    assert load_trainer_state(run).step == 1  # saved at the stop, though only the end was due
    assert [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()] == [1, 2]
    assert len([e for e in load_episodes(run / EPISODES_DIR / "step-00002.jsonl") if not e.valid]) == 3

    register_broken([])  # the environment fixed
    resumed = Trainer(config(tiny_model_dir, run, envs=[BROKEN_ID], steps=2), resume=run, progress=False).run()
    assert comparable(resumed.records) == comparable(straight.records)
    w1, w2 = weights(straight.checkpoint / MODEL), weights(resumed.checkpoint / MODEL)
    for name in w1:
        torch.testing.assert_close(w1[name], w2[name], rtol=0, atol=1e-7)


def test_a_run_that_stops_at_its_first_step_says_it_has_no_checkpoint(tiny_model_dir, tmp_path):
    register_broken(seeds_of(1)[:1])
    trainer = Trainer(config(tiny_model_dir, tmp_path / "run", envs=[BROKEN_ID], steps=2, max_failed_share=0.0),
                      progress=False)
    with pytest.raises(FailedEpisodesError, match=r"Step 1: 1 of 4 episodes failed.*has no checkpoint"):
        trainer.run()
    assert not (tmp_path / "run" / "checkpoint").exists()


def test_a_failed_self_play_episode_trains_neither_seat(tiny_model_dir, tmp_path, monkeypatch):
    """The environment hands one seat a NaN reward that only ``info["rewards"]`` shows; the
    episode fails as malformed, and both seats' parts leave the estimator and the loss."""
    import gem_trainer.training.rollout as rollout_module
    from gem_core.estimators import advantage_stats, estimate

    register_broken_dilemma_once()
    seen = []
    real = rollout_module.training_samples

    def recording(parts, advantages, policy):
        samples, trained, skipped = real(parts, advantages, policy)
        seen.append((list(parts), [list(a) for a in advantages], trained, skipped))
        return samples, trained, skipped

    monkeypatch.setattr("gem_trainer.training.trainer.training_samples", recording)
    result = Trainer(config(tiny_model_dir, tmp_path / "run", steps=1, envs=[BROKEN_DILEMMA_ID],
                            max_failed_share=1.0), progress=False).run()
    [record] = result.records
    [(parts, advantages, trained, skipped)] = seen
    episodes = load_episodes(result.output_dir / EPISODES_DIR / "step-00001.jsonl")
    failed = [e for e in episodes if not e.valid]
    assert failed and all(e.seed % 2 == 0 and e.failure.kind == "malformed" and "player_0" in e.failure.error
                          for e in failed)
    assert len(failed) < len(episodes)
    assert [p.agent for p in parts if not p.valid] == ["player_0", "player_1"] * len(failed)
    assert all(a == 0.0 for p, advantage in zip(parts, advantages) if not p.valid for a in advantage)
    failed_turns = sum(p.num_turns for p in parts if not p.valid)
    assert skipped >= failed_turns and trained <= sum(p.num_turns for p in parts if p.valid)
    valid = [p for p in parts if p.valid]
    expected = advantage_stats(estimate("rebn", [p.rewards for p in valid], gamma=0.9))
    assert record["advantage_std"] == pytest.approx(expected["advantage_std"])
    assert record["failed_rate"] == len(failed) / len(episodes)


def test_max_failed_share_must_be_a_share():
    from gem_trainer.config import build_config

    for bad in (1.5, -0.1, float("nan"), "half"):
        with pytest.raises(ConfigError, match="max_failed_share"):
            build_config({"max_failed_share": bad})
    assert build_config({"max_failed_share": 0}).max_failed_share == 0


# ---- what the step line, the metrics and the stop message say ------------------------------------

def episode(env_id: str, seed: int, failure: Failure | None = None) -> Episode:
    return Episode(env_id, seed, [Turn("obs", "act", 1.0, terminated=True)], failure=failure)


def test_failures_are_counted_per_environment_and_kind():
    broken = Failure("malformed", "MalformedResultError: step() returned a reward of nan", "step", 0)
    died = Failure("sandbox", "SandboxFailure: the container exited", "step", 0)
    batch = [episode("a", 1, broken), episode("a", 2), episode("a", 3, broken), episode("a", 4),
             episode("b", 5, died), episode("b", 6)]
    assert failure_shares(batch) == {"failed_rate/a": 0.5, "failed_malformed/a": 0.5,
                                     "failed_rate/b": 0.5, "failed_sandbox/b": 0.5}
    record = {"failed_rate": 0.5, **failure_shares(batch)}
    assert failures_text(record) == "failed 50.0% (a: malformed 50.0%; b: sandbox 50.0%)"
    assert failures_text({"failed_rate": 0.0, "failed_rate/a": 0.0}) == ""
    assert failures_text({"failed_rate": 0.25, "failed_malformed/a": 0.25}) == "failed 25.0% (malformed 25.0%)"
    report = failure_report(batch)
    assert report == ("a: 2 of 4 failed: 2 malformed ('MalformedResultError: step() returned a reward of nan' x2; "
                      "seeds 1, 3). b: 1 of 2 failed: 1 sandbox ('SandboxFailure: the container exited'; seeds 5).")
    assert failure_report(batch[1:2]) == ""


def test_the_turn_that_failed_a_self_play_episode_is_the_move_of_the_seat_to_move():
    from gem_core.multiagent import split_by_agent

    failure = Failure("error", "RuntimeError: the game server died", "step", 2)
    turns = [Turn("o0", "a0", 0.0, info={"agent": "player_0", "next_agent": "player_1", "rewards": {}}),
             Turn("o1", "a1", 0.0, info={"agent": "player_1", "next_agent": "player_0", "rewards": {"player_0": 1.0}}),
             Turn("o2", "a2", 0.0, truncated=True, info={"fault": {"kind": "error", "phase": "step"}})]
    parts = split_by_agent(Episode("multiagent:X-v0-selfplay", 3, turns, failure=failure))
    assert [(p.agent, [t.action for t in p.turns]) for p in parts] == [("player_0", ["a0", "a2"]),
                                                                      ("player_1", ["a1"])]
    assert all(p.failure is failure and not p.valid for p in parts)

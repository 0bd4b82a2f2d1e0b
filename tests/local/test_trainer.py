"""Training runs of the tiny model: weights change, metrics and plot appear, resume is exact,
LoRA works, groups share start states, and bad input fails before any episode is played."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from gem_core import GemError, UnknownEnvError, UnknownNameError
from gem_core.episodes import load_episodes
from gem_trainer.config import ConfigError, build_config
from gem_trainer.metrics import TIMINGS
from gem_trainer.models import ModelError
from gem_trainer.training.checkpoint import CHECKPOINT, MODEL, load_trainer_state
from gem_trainer.training.memory import MemoryBudgetError
from gem_trainer.training.trainer import EPISODES_DIR, Trainer
from tests.local.envs import ENV_ID, register_once

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True, scope="module")
def _test_env():
    register_once()


def config(tiny_model_dir: Path, output_dir: Path, **overrides):
    values = {
        "model": str(tiny_model_dir), "envs": [ENV_ID], "steps": 2, "episodes_per_step": 4,
        "max_new_tokens": 6, "learning_rate": 1e-3, "device": "cpu", "output_dir": str(output_dir),
        "micro_batch_tokens": 256, "lora": False, "threads": 1,
    }
    values.update(overrides)
    return build_config(values)


def weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors"))
    assert files, f"no weights in {folder}"
    merged: dict[str, torch.Tensor] = {}
    for file in files:
        merged.update(load_file(file))
    return merged


def test_training_changes_the_weights_and_writes_metrics_plot_and_checkpoint(tiny_model_dir, tmp_path):
    result = Trainer(config(tiny_model_dir, tmp_path / "run", steps=3), progress=False).run()

    assert [r["step"] for r in result.records] == [1, 2, 3]
    lines = result.metrics_path.read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [1, 2, 3]
    for record in result.records:
        assert record["episodes"] == 4
        assert record["turns_per_episode"] == 2  # LetterShare has two turns
        assert record["turns_trained"] == 8
        assert 0 <= record["mean_return"] <= 2 and 0 <= record["success_rate"] <= 1
        assert record["tokens_per_second"] > 0 and record["grad_norm"] > 0
    assert len({r["loss"] for r in result.records}) == 3  # the loss moves from step to step
    assert result.plot_path.read_bytes()[:8] == PNG_MAGIC

    before, after = weights(tiny_model_dir), weights(result.checkpoint / MODEL)
    changed = [name for name in before if not torch.equal(before[name], after[name])]
    assert changed, "no weight changed"
    assert load_trainer_state(result.output_dir).step == 3

    episodes = load_episodes(result.output_dir / EPISODES_DIR / "step-00003.jsonl")
    assert len(episodes) == 4 and all(e.num_turns == 2 for e in episodes)
    # the second prompt holds the first exchange, through the chat template
    second = episodes[0].turns[1].observation
    assert second.count("<|im_start|>user") == 2 and "<|im_start|>assistant" in second
    assert episodes[0].turns[0].action in second


def test_resume_continues_exactly_where_the_run_stopped(tiny_model_dir, tmp_path):
    straight = Trainer(config(tiny_model_dir, tmp_path / "straight", steps=3), progress=False).run()

    first = Trainer(config(tiny_model_dir, tmp_path / "split", steps=2), progress=False).run()
    assert load_trainer_state(first.output_dir).step == 2
    resumed = Trainer(config(tiny_model_dir, tmp_path / "split", steps=3), resume=first.output_dir,
                      progress=False).run()

    assert [r["step"] for r in resumed.records] == [1, 2, 3]
    for a, b in zip(straight.records, resumed.records):
        assert a["mean_return"] == b["mean_return"] and a["loss"] == pytest.approx(b["loss"], abs=1e-7)
    w1, w2 = weights(straight.checkpoint / MODEL), weights(resumed.checkpoint / MODEL)
    for name in w1:
        torch.testing.assert_close(w1[name], w2[name], rtol=0, atol=1e-7)
    s1, s2 = load_trainer_state(straight.output_dir), load_trainer_state(resumed.output_dir)
    assert s1.step == s2.step == 3
    for key, state in s1.optimizer["state"].items():
        assert state["step"] == s2.optimizer["state"][key]["step"] == 3
        torch.testing.assert_close(state["exp_avg_sq"], s2.optimizer["state"][key]["exp_avg_sq"], rtol=0, atol=1e-9)

    with pytest.raises(ConfigError, match="already done 3 steps"):
        Trainer(config(tiny_model_dir, tmp_path / "split", steps=3), resume=first.output_dir, progress=False).run()


def test_lora_run_saves_only_the_adapter_and_resumes(tiny_model_dir, tmp_path):
    first = Trainer(config(tiny_model_dir, tmp_path / "lora", steps=1, lora=True, lora_rank=4), progress=False).run()
    saved = first.checkpoint / MODEL
    assert (saved / "adapter_config.json").exists() and not (saved / "config.json").exists()
    adapter = weights(saved)
    assert adapter and all("lora_" in name for name in adapter)

    again = Trainer(config(tiny_model_dir, tmp_path / "lora", steps=2, lora=True, lora_rank=4),
                    resume=first.output_dir, progress=False).run()
    assert [r["step"] for r in again.records] == [1, 2]
    moved = weights(again.checkpoint / MODEL)
    assert any(not torch.equal(adapter[n], moved[n]) for n in adapter)

    with pytest.raises(ConfigError, match="resume it with --lora"):
        Trainer(config(tiny_model_dir, tmp_path / "lora", steps=3, lora=False), resume=first.output_dir,
                progress=False).run()


def test_group_estimator_plays_each_start_state_several_times(tiny_model_dir, tmp_path):
    result = Trainer(config(tiny_model_dir, tmp_path / "grpo", steps=1, estimator="grpo", group_size=2,
                            envs=[ENV_ID, "game:GuessTheNumber-v0-easy"]), progress=False).run()
    episodes = load_episodes(result.output_dir / EPISODES_DIR / "step-00001.jsonl")
    assert [(e.env_id, e.seed) for e in episodes[0::2]] == [(e.env_id, e.seed) for e in episodes[1::2]]
    assert [e.env_id for e in episodes] == [ENV_ID, ENV_ID, "game:GuessTheNumber-v0-easy", "game:GuessTheNumber-v0-easy"]
    assert episodes[0].seed != episodes[2].seed


def test_self_play_trains_every_seat_with_its_own_rewards(tiny_model_dir, tmp_path, monkeypatch):
    """One policy plays both seats of a two-player game (simultaneous moves, so both seats move
    whatever the tiny model writes); each seat's moves are trained on that seat's own rewards."""
    import gem_trainer.training.rollout as rollout_module
    from gem_core.multiagent import split_by_agent

    seen = []

    def recording(episode):
        parts = split_by_agent(episode)
        seen.append((episode, parts))
        return parts

    monkeypatch.setattr(rollout_module, "split_by_agent", recording)
    result = Trainer(config(tiny_model_dir, tmp_path / "selfplay", steps=1, estimator="grpo", group_size=2,
                            envs=["multiagent:PrisonersDilemma-v0-selfplay"]), progress=False).run()
    assert len(seen) == 4
    for episode, parts in seen:
        assert [part.agent for part in parts] == ["player_0", "player_1"]
        for part in parts:
            assert part.num_turns == 5 and all(t.info["agent"] == part.agent for t in part.turns)
            earned = sum(t.info["rewards"].get(part.agent, 0.0) for t in episode.turns)
            assert part.total_reward == pytest.approx(earned)
    record = result.records[-1]
    assert record["turns_trained"] > 0 and record["turns_trained"] + record["turns_skipped"] == 40  # 4 x 2 seats x 5


def test_over_long_prompts_end_their_episode_and_are_not_trained(tiny_model_dir, tmp_path):
    result = Trainer(config(tiny_model_dir, tmp_path / "long", steps=1, max_prompt_tokens=8), progress=False).run()
    record = result.records[0]
    assert record["turns_trained"] == 0 and record["turns_skipped"] == 8
    episodes = load_episodes(result.output_dir / EPISODES_DIR / "step-00001.jsonl")
    assert all(t.action == "" for e in episodes for t in e.turns)


# ---- bad input: each fails with a message naming the fix, before any episode is played ------

def test_an_env_id_typo_names_the_closest_ids(tiny_model_dir, tmp_path):
    with pytest.raises(UnknownEnvError, match="Did you mean: game:GuessTheNumber-v0-easy"):
        config(tiny_model_dir, tmp_path, envs=["game:GuessTheNumbr-v0-easy"])


def test_unknown_estimator_and_bad_values_are_refused(tiny_model_dir, tmp_path):
    with pytest.raises(UnknownNameError, match="Did you mean: rebn"):
        config(tiny_model_dir, tmp_path, estimator="rebm")
    with pytest.raises(ConfigError, match="gamma"):
        config(tiny_model_dir, tmp_path, gamma=1.5)
    with pytest.raises(ConfigError, match="multiple of group_size"):
        config(tiny_model_dir, tmp_path, episodes_per_step=5, group_size=2)
    with pytest.raises(ConfigError, match="steps must be int"):
        config(tiny_model_dir, tmp_path, steps="many")
    with pytest.raises(UnknownNameError, match="Did you mean: steps"):
        build_config({"stpes": 3})


def test_a_group_estimator_without_groups_is_refused_before_loading(tiny_model_dir, tmp_path):
    trainer = Trainer(config(tiny_model_dir, tmp_path / "run", estimator="grpo"), progress=False)
    with pytest.raises(ConfigError, match="--group-size"):
        trainer.run()
    assert not (tmp_path / "run").exists()


def test_a_missing_model_is_refused(tmp_path):
    trainer = Trainer(config(tmp_path / "nowhere", tmp_path / "run"), progress=False)
    with pytest.raises(ModelError, match="does not exist"):
        trainer.run()


def test_a_batch_that_cannot_fit_in_memory_is_refused_before_playing(tiny_model_dir, tmp_path):
    trainer = Trainer(config(tiny_model_dir, tmp_path / "run", micro_batch_tokens=10**9), progress=False)
    with pytest.raises(MemoryBudgetError, match="--micro-batch-tokens"):
        trainer.run()
    assert not (tmp_path / "run").exists()
    trainer = Trainer(config(tiny_model_dir, tmp_path / "run", episodes_per_step=10**7), progress=False)
    with pytest.raises(MemoryBudgetError, match="--episodes-per-step"):
        trainer.run()


def test_resume_needs_a_checkpoint(tiny_model_dir, tmp_path):
    with pytest.raises(GemError, match="no complete checkpoint"):
        Trainer(config(tiny_model_dir, tmp_path), resume=tmp_path, progress=False)
    assert not (tmp_path / CHECKPOINT).exists()


def test_the_same_seed_and_settings_give_the_same_metrics(tiny_model_dir, tmp_path):
    """Bit for bit on one machine, LoRA included (its new weights come from the seeded generator)."""
    runs = [Trainer(config(tiny_model_dir, tmp_path / name, steps=2, lora=True, lora_rank=4, threads=None),
                    progress=False).run() for name in ("first", "second")]
    first, second = ([{k: v for k, v in r.items() if k not in TIMINGS} for r in run.records] for run in runs)
    assert first == second and first[0]["grad_norm"] > 0


def test_micro_batches_are_sized_from_free_gpu_memory_when_not_set(tiny_model_dir, monkeypatch):
    """On a GPU every micro-batch pays thousands of kernel launches: as large as half the free memory
    allows. The free memory is stood in for: this test has no GPU."""
    from gem_trainer.training import memory
    from gem_trainer.config import build_config
    from gem_trainer.models import load_model

    model = load_model(tiny_model_dir)
    parameters = [p for p in model.parameters() if p.requires_grad]
    settings = build_config({"model": str(tiny_model_dir)})
    assert memory.micro_batch_tokens(model, parameters, settings, "cpu") == memory.CPU_MICRO_BATCH_TOKENS
    assert memory.micro_batch_tokens(model, parameters, build_config({"micro_batch_tokens": 300}), "cuda") == 300

    per_token = memory.activation_bytes_per_token(model, 4)
    estimate = memory.estimate_training_memory(model, parameters, settings)
    for tokens in (2000, 6000):
        free = (estimate.static + estimate.sampling + 2 * tokens * per_token) / memory.HEADROOM + 1
        monkeypatch.setattr(memory, "available_memory", lambda device: free)
        assert memory.micro_batch_tokens(model, parameters, settings, "cuda") == tokens // 256 * 256
        memory.check_training_memory(model, parameters, settings, "cuda", tokens // 256 * 256)  # fits
    monkeypatch.setattr(memory, "available_memory", lambda device: 10**15)
    assert memory.micro_batch_tokens(model, parameters, settings, "cuda") == memory.MAX_MICRO_BATCH_TOKENS
    monkeypatch.setattr(memory, "available_memory", lambda device: estimate.static)  # no room at all
    longest = settings.max_prompt_tokens + settings.max_new_tokens
    assert memory.micro_batch_tokens(model, parameters, settings, "cuda") == longest
    with pytest.raises(MemoryBudgetError, match="GPU"):
        memory.check_training_memory(model, parameters, settings, "cuda", longest)

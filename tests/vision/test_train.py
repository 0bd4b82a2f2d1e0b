"""A vision-language model in `gem train` and `gem eval`: the images of a visual task reach the
model when it samples and when it trains (the vision tower's weights change), and checkpoints
reload as vision-language models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gem_core
from gem_core.images import IMAGE

PIL = pytest.importorskip("PIL.Image")

SHADES = "shade:Visual-v0"


class Shades(gem_core.Env):
    """Shows a grey square of a seeded shade; any answer scores its length modulo 3 (so that a
    random model's answers score differently and training moves the weights)."""

    def reset(self, seed=None, **options):
        super().reset(seed)
        shade = self.rng.randrange(256)
        return f"{IMAGE}\nHow bright is this square?", {"images": [PIL.new("RGB", (32, 32), (shade,) * 3)]}

    def step(self, action):
        return "Thanks.", float(len(action) % 3), True, False, {}

    def sample_random_action(self):
        return "\\boxed{1}"


@pytest.fixture(scope="module", autouse=True)
def registered():
    gem_core.register(SHADES, Shades)
    yield
    gem_core.registry.deregister(SHADES)


def tower(folder_or_model):
    """The vision tower's weights, by name."""
    from safetensors.torch import load_file

    return {k: v for k, v in load_file(Path(folder_or_model) / "model.safetensors").items() if "vision" in k}


def test_gem_train_feeds_the_images_to_a_vision_language_model(tiny_vlm_dir, tmp_path, monkeypatch):
    from gem_trainer.config import build_config
    from gem_trainer.decoding.sampling import LocalPolicy
    from gem_trainer.training.trainer import Trainer

    shown = []
    encode = LocalPolicy.encode

    def recording(self, prompt, images):
        ids, vision = encode(self, prompt, images)
        shown.append((len(images), vision))
        return ids, vision

    monkeypatch.setattr(LocalPolicy, "encode", recording)
    config = build_config({"model": str(tiny_vlm_dir), "envs": [SHADES], "steps": 2, "episodes_per_step": 4,
                           "max_new_tokens": 6, "learning_rate": 1e-2, "device": "cpu", "lora": False,
                           "estimator": "reinforce", "output_dir": str(tmp_path / "run"), "threads": 1})
    result = Trainer(config, progress=False).run()
    assert len(shown) == 8 and all(count == 1 and "pixel_values" in vision for count, vision in shown)
    assert result.records[-1]["turns_trained"] == 4
    before, after = tower(tiny_vlm_dir), tower(result.checkpoint / "model")
    assert any(not (before[k] == after[k]).all() for k in before)  # the images were in the training forward
    assert (result.checkpoint / "model" / "processor_config.json").exists()


def test_gem_eval_scores_a_vision_language_model_on_a_visual_task(tiny_vlm_dir, tmp_path):
    from tests.helpers import gem_command

    out = tmp_path / "eval"
    result = gem_command("eval", "--model", str(tiny_vlm_dir), "--env", "vision:Geometry-v0", "--episodes", "2",
                         "--max-new-tokens", "4", "--output-dir", str(out), "--no-progress")
    assert result.returncode == 0, result.stderr
    (report,) = json.loads((out / "report.json").read_text())["environments"]
    assert report["episodes"] == 2


def test_a_text_model_on_a_visual_task_is_told_what_is_missing(tmp_path):
    from gem_core import GemError
    from gem_trainer.decoding.sampling import LocalPolicy, SamplingSettings

    policy = LocalPolicy.__new__(LocalPolicy)
    policy.processor, policy.settings = None, SamplingSettings()
    with pytest.raises(GemError, match="no image processor"):
        policy(["<image>\nWhat is it?"], infos=[{"images": [PIL.new("RGB", (4, 4))]}])

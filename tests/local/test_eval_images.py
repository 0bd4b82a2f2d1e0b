"""`gem eval --base-url` on a visual task: images go to the endpoint as data-URL image parts."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

import gem_core
from gem_core.images import png_bytes
from gem_trainer.evaluation.evaluate import EvalSettings, run_evaluation
from tests.local.chat_server import ChatServer

pytest.importorskip("PIL")
ENV_ID = "vision:Geometry-v0"


def test_eval_sends_each_image_as_a_png_data_url_part(tiny_model_dir: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GEM_TEST_KEY", "sk-test")
    with ChatServer(tiny_model_dir, "tiny-chat", api_key="sk-test", delay=0) as server:
        report = run_evaluation(EvalSettings(envs=[ENV_ID], model="tiny-chat", base_url=server.base_url,
                                             episodes=3, concurrency=3, max_new_tokens=4, seed=5,
                                             output_dir=str(tmp_path), progress=False, api_key_env="GEM_TEST_KEY"))
    assert report["environments"][0]["episodes"] == 3
    sent = {}
    for request in server.requests:
        (message,) = request["messages"]
        picture, question = message["content"][0], message["content"][1]
        assert picture["type"] == "image_url" and question["type"] == "text"
        prefix, data = picture["image_url"]["url"].split(",", 1)
        assert prefix == "data:image/png;base64"
        sent[base64.b64decode(data)] = question["text"]
    expected = {png_bytes(gem_core.make(ENV_ID).reset(seed=seed)[1]["images"][0]) for seed in (5, 6, 7)}
    assert set(sent) == expected  # each episode's own image, byte for byte
    assert all("\\boxed{}" in text for text in sent.values())
    episodes = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 3

"""What a config command writes next to the datasets: the library's GEM file and the launch command."""

from __future__ import annotations

import json
import sys

import pytest

from gem_adapters.common.settings import RunSettings
from gem_adapters.common.written import check_episodes_per_gpu, write_run, yaml_writer
from gem_core import GemError, MissingDependencyError

EASY = "game:GuessTheNumber-v0-easy"


def test_writes_the_datasets_the_file_and_the_command(tmp_path):
    settings = RunSettings(env_ids=(EASY,), model="m", out_dir=tmp_path / "run", train_size=3, val_size=1, batch_size=1)
    counts = []
    written = write_run(settings, row=lambda env_id, seed, index, split, observation: {"seed": seed, "split": split},
                        file_name="gem_file.py", file_text="X = 1\n",
                        launch_argv=lambda train, val, file: ["run", str(train), str(file), "a b"], progress=counts.append)
    out = (tmp_path / "run").resolve()
    assert written.file == out / "gem_file.py" and written.file.read_text() == "X = 1\n"
    assert [json.loads(line) for line in written.splits.val.read_text().splitlines()] == [{"seed": 3, "split": "val"}]
    assert written.command == f"run {out / 'train.jsonl'} {out / 'gem_file.py'} 'a b'"
    assert counts == [1, 2, 3, 4]


def test_every_gpu_needs_an_episode(tmp_path):
    settings = RunSettings(env_ids=(EASY,), model="m", out_dir=tmp_path, batch_size=2, rollouts_per_start=2, gpus=8)
    with pytest.raises(GemError, match=r"number of GPUs \(8\), as SomeLib requires"):
        check_episodes_per_gpu(settings, "SomeLib")
    check_episodes_per_gpu(RunSettings(env_ids=(EASY,), model="m", out_dir=tmp_path, batch_size=2,
                                       rollouts_per_start=2, gpus=4), "SomeLib")


def test_yaml_is_written_in_the_dialect_the_library_reads(monkeypatch):
    pytest.importorskip("yaml")
    data = {"b": 1, "a": {"list": [1, 2]}}
    assert yaml_writer("trl", hydra=False)(data) == "b: 1\na:\n  list:\n  - 1\n  - 2\n"  # keys in order
    monkeypatch.setitem(sys.modules, "omegaconf", None)  # not installed
    with pytest.raises(MissingDependencyError, match=r"gem verl config.*omegaconf.*verl"):
        yaml_writer("verl", hydra=True)

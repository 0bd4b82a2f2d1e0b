"""reasoning-gym's codeio runs its dataset's programs to make an item: they run in a sandboxed
worker, never in the caller's process or folder."""

import gzip
import json
import os
import re
import subprocess
import sys

import pytest

import gem_core
from gem_core.errors import GemError
from gem_core.sandbox.worker_pool import sandboxed
from gem_envs.rg import datasets, generation

needs_bubblewrap = pytest.mark.skipif(not sandboxed(), reason="bubblewrap is not available here")


def test_only_datasets_that_run_programs_and_mixes_of_them_go_to_the_workers():
    assert generation.runs_programs("codeio", {})
    assert not generation.runs_programs("leg_counting", {})
    assert generation.runs_programs("composite", {"datasets": [{"name": "leg_counting"}, {"name": "codeio"}]})
    assert not generation.runs_programs("composite", {"datasets": [{"name": "leg_counting"}]})


@needs_bubblewrap
def test_codeio_programs_run_in_the_worker_and_write_only_its_scratch_folder(tmp_path, monkeypatch):
    def not_here(*args):
        raise AssertionError("a codeio item was made in the caller's process")

    monkeypatch.setattr(datasets, "generate_item", not_here)
    monkeypatch.chdir(tmp_path)
    env = gem_core.make("rg:codeio", size=60)
    for index in range(len(env.dataset)):
        observation, _ = env.reset(index=index)
        assert observation.startswith(env.entry["question"])
        _, reward, *_ = env.step(f"\\boxed{{{env.entry['answer']}}}")
        assert reward == 1.0
    assert list(tmp_path.iterdir()) == []


@needs_bubblewrap
def test_a_program_that_writes_a_file_works_in_its_scratch_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = gem_core.make("rg:codeio")
    tasks = _tasks_whose_programs_write_files()
    writers = [i for i in range(len(env.dataset)) if any(task in env.dataset[i]["question"] for task in tasks)]
    assert writers, "no item of this dataset runs a program that writes a file: the test checks nothing"
    for index in writers:
        assert env.dataset[index]["metadata"]["output_data"] not in ({}, None), index
    assert list(tmp_path.iterdir()) == []


def _tasks_whose_programs_write_files():
    """The task descriptions of the codeio programs (in reasoning-gym's data) that open a file
    for writing."""
    from reasoning_gym.data import get_data_file_path

    with gzip.open(get_data_file_path("codeio.jsonl.gz"), "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    opens_for_writing = re.compile(r"""open\([^)]*['"]w""")
    return [row["task_description"] for row in rows
            if opens_for_writing.search(row["code_sample"] + row["input_generator"])]


def test_the_same_item_comes_back_from_a_fresh_worker():
    arguments = ("codeio", 40, 7, "{}")
    first = [generation.sandboxed_item(*arguments, i) for i in range(40)]
    generation.worker_pool().close()
    assert [generation.sandboxed_item(*arguments, i) for i in reversed(range(40))][::-1] == first


def test_a_mix_with_codeio_makes_every_item_in_the_workers(monkeypatch):
    monkeypatch.setattr(datasets, "generate_item", lambda *args: pytest.fail("made in the caller's process"))
    env = gem_core.make("rg:composite", size=20, datasets={"codeio": 1, "leg_counting": 1})
    sources = set()
    for index in range(len(env.dataset)):
        env.reset(index=index)
        sources.add(env.entry["metadata"]["source_dataset"])
    assert sources == {"codeio", "leg_counting"}


def test_an_item_past_its_time_limit_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(generation, "TIME_LIMIT", 1e-6)
    env = gem_core.make("rg:codeio", size=5, seed=123)
    with pytest.raises(GemError, match=r"item \d of reasoning-gym's 'codeio' .* more than 1e-06 s"):
        env.reset(seed=0)


def test_without_bubblewrap_programs_run_in_a_throw_away_folder_with_a_warning(tmp_path):
    code = """if True:
        import gem_core
        env = gem_core.make("rg:codeio")
        for index in range(len(env.dataset)):
            env.reset(index=index)
        print("made every item")
    """
    path_without_bwrap = os.path.dirname(sys.executable)  # the interpreter's folder, not /usr/bin
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path, env={**os.environ, "PATH": path_without_bwrap})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "made every item"
    assert "runs its dataset's programs WITHOUT a sandbox" in done.stderr
    assert list(tmp_path.iterdir()) == []

"""``gem openrlhf config`` and ``python -m gem_adapters.openrlhf.train``: the files written, the
printed command parsed and checked by OpenRLHF's own command line, and clear errors for bad input.
Stood in for, at import only: flash_attn and vllm (standins.py), which OpenRLHF's command-line
module imports."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

import gem_core
from gem_core.wrappers.observation import as_seen  # observations as adapters show them
from gem_adapters.openrlhf import ESTIMATOR_VARIABLE, hook, train
from gem_adapters.openrlhf.advantages import uninstall
from gem_adapters.openrlhf.labels import decode_label
from tests.adapters.config_command import (BAD_INPUT, EASY, HARD, assert_listed, assert_refused_before_writing,
                                           config_run)


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    return config_run(tmp_path_factory, "openrlhf", "--batch-size", "5", "--prompt-length", "512",
                      "--response-length", "1536")


@pytest.fixture
def gem_main(monkeypatch, openrlhf_parse):
    """``train.main`` up to where OpenRLHF would start training; Ray's start is recorded, not made,
    and the setup hook (which the Ray test runs for real) is recorded too."""
    started, hooked = [], []
    monkeypatch.setattr(train, "start_ray", started.append)
    monkeypatch.setattr(hook, "setup", lambda: hooked.append(True))
    monkeypatch.delenv(ESTIMATOR_VARIABLE, raising=False)

    def run(argv):
        args = openrlhf_parse(argv, run=lambda: train.main(argv))
        return args, started, hooked

    yield run
    uninstall()


def read_rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_writes_datasets_and_the_agent_file(cli_run):
    out, result = cli_run
    assert sorted(p.name for p in out.iterdir()) == ["gem_agent.py", "train.jsonl", "val.jsonl"]
    assert f"{out / 'gem_agent.py'} (pass as --train.agent_func_path)" in result.stderr
    train_rows, val_rows = read_rows(out / "train.jsonl"), read_rows(out / "val.jsonl")
    assert len(train_rows) == 10 and len(val_rows) == 4
    labels = [decode_label(r["label"]) for r in train_rows + val_rows]
    assert [label["env_id"] for label in labels[:4]] == [EASY, HARD, EASY, HARD]
    assert [label["seed"] for label in labels] == list(range(100, 114))  # validation seeds follow
    for row, label in zip(train_rows[:2], labels):
        assert row["prompt"] == as_seen(*gem_core.make(label["env_id"]).reset(seed=label["seed"]))
    assert ("OPTIONS = {'wrappers': [], 'max_turns': 6, 'max_tokens_per_turn': None, 'env_pool': None, "
            "'episode_deadline': None}") in (
        out / "gem_agent.py").read_text()


def test_the_printed_command_parses_with_openrlhfs_own_command_line(cli_run, gem_main):
    out, result = cli_run
    command = shlex.split(result.stdout.strip().splitlines()[-1])
    assert command[1:3] == ["-m", "gem_adapters.openrlhf.train"]
    args, started, hooked = gem_main(command[3:])
    assert started == ["rebn"] and hooked == [True]
    assert args.algo.advantage.estimator == "reinforce" and args.algo.advantage.gamma == 0.8
    assert args.train.agent_func_path == str(out / "gem_agent.py")
    assert args.reward.remote_url == ["agent"]  # OpenRLHF's own reading of an agent run
    assert (args.data.prompt_dataset, args.eval.dataset) == (str(out / "train.jsonl"), str(out / "val.jsonl"))
    assert (args.data.input_key, args.data.label_key, args.data.apply_chat_template) == ("prompt", "label", True)
    assert (args.rollout.batch_size, args.rollout.n_samples_per_prompt, args.train.batch_size) == (5, 2, 10)
    assert args.data.max_len == 2048 and args.actor.model_name_or_path == "Qwen/Qwen3-0.6B"
    assert args.critic.model_name_or_path is None  # no critic for a GEM estimator


def test_without_the_gem_flag_openrlhf_runs_as_it_is(gem_main):
    args, started, hooked = gem_main(["--actor.model_name_or_path", "m", "--actor.num_gpus_per_node", "1",
                                      "--algo.advantage.estimator", "group_norm",
                                      "--rollout.n_samples_per_prompt", "2"])
    assert args.algo.advantage.estimator == "group_norm" and started == [] and hooked == []


def test_the_ray_runtime_environment_carries_the_hook_and_openrlhfs_worker_variables(monkeypatch):
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    env = train.runtime_env("rebn")
    assert env["worker_process_setup_hook"] == "gem_adapters.openrlhf.hook.setup"
    assert env["env_vars"] == {ESTIMATOR_VARIABLE: "rebn", "NCCL_DEBUG": "INFO", "TOKENIZERS_PARALLELISM": "true",
                               "RAY_ENABLE_ZERO_COPY_TORCH_TENSORS": "1"}


@pytest.mark.parametrize(("argv", "message"), [
    (["--gem.estimator", "rebm"], "rebn"),
    (["--gem.estimator"], "needs a value"),
    (["--gem.estimater=rebn"], "Unknown option --gem.estimater"),
    (["--gem.estimator=rebn", "--algo.advantage.estimator", "gae"], "drop --algo.advantage.estimator"),
    (["--gem.estimator", "rebn", "--reward.overlong_buffer_len", "64"], "length penalties"),
])
def test_bad_flags_of_the_entry_point_fail_before_anything_starts(argv, message, monkeypatch, capsys):
    started = []
    monkeypatch.setattr(train, "start_ray", started.append)
    assert train.main(["--actor.model_name_or_path", "m", *argv]) == 2
    assert message in capsys.readouterr().err and started == []


@pytest.mark.parametrize(("option", "message"), BAD_INPUT)
def test_bad_input_fails_before_anything_is_written(tmp_path, option, message):
    assert_refused_before_writing("openrlhf", tmp_path, option, message)


def test_gem_lists_the_adapter():
    assert_listed("openrlhf")


def test_this_projects_tests_package_wins_over_the_one_openrlhf_installs():
    import importlib.metadata

    import tests

    shipped = [f for f in importlib.metadata.files("openrlhf") if f.parts[0] == "tests" and f.name == "__init__.py"]
    assert shipped, "OpenRLHF no longer ships a top-level tests package"
    repo = Path(__file__).resolve().parents[3]
    assert Path(tests.__file__).resolve() == repo / "tests" / "__init__.py"

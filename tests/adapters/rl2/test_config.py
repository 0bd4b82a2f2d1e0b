"""``gem rl2 config``: the files written, the printed Hydra overrides composed against RL2's own
ppo.yaml, and clear errors for bad input."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from gem_adapters.common.settings import RunSettings
from gem_adapters.rl2.config import hydra_value, write_run
from tests.adapters.config_command import (BAD_INPUT, EASY, HARD, assert_listed, assert_refused_before_writing,
                                           config_run)


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    return config_run(tmp_path_factory, "rl2", "--batch-size", "5", "--max-tokens-per-turn", "256",
                      "--estimator", "grpo", "--gpus", "2", "--epochs", "3", "--lr", "2e-6")


def compose(overrides):
    """RL2's ppo.yaml with ``overrides``, composed by Hydra and resolved as RL2's trainer does."""
    import RL2.utils.algorithms
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    config_dir = Path(RL2.utils.algorithms.__file__).parents[1] / "trainer" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        config = hydra_compose("ppo", overrides=overrides)
    OmegaConf.resolve(config)
    return config


def test_writes_datasets_and_the_env_file(cli_run):
    out, result = cli_run
    assert sorted(p.name for p in out.iterdir()) == ["gem_env.py", "train.jsonl", "val.jsonl"]
    assert f"{out / 'gem_env.py'} (pass as rollout.env_path)" in result.stderr
    rows = [json.loads(line) for path in ("train.jsonl", "val.jsonl") for line in (out / path).read_text().splitlines()]
    assert len(rows) == 14 and all(set(row) == {"extra_info"} for row in rows)  # no prompt: RL2 calls reset
    assert [row["extra_info"]["env_id"] for row in rows[:4]] == [EASY, HARD, EASY, HARD]
    assert [row["extra_info"]["seed"] for row in rows] == list(range(100, 114))  # validation seeds follow
    text = (out / "gem_env.py").read_text()
    assert "MODEL = 'Qwen/Qwen3-0.6B'" in text
    assert ("OPTIONS = {'wrappers': [], 'max_turns': 6, 'max_tokens_per_turn': 256, 'env_pool': None, "
            "'episode_deadline': None}") in text


def test_the_printed_overrides_compose_against_rl2s_ppo_yaml(cli_run):
    out, result = cli_run
    command = shlex.split(result.stdout.strip().splitlines()[-1])
    assert command[:5] == ["torchrun", "--nnodes=1", "--nproc_per_node=2", "-m", "gem_adapters.rl2.train"]
    assert command[-1] == "gem.estimator=grpo"
    config = compose(command[5:-1])
    assert config.train_data.path == str(out / "train.jsonl") and config.test_data.path == str(out / "val.jsonl")
    assert (config.train_data.prompts_per_rollout, config.train_data.responses_per_prompt) == (5, 2)
    assert config.adv.responses_per_prompt == 2 and config.adv.gamma == 0.8
    assert config.actor.model_name == config.rollout.server_args.model_path == "Qwen/Qwen3-0.6B"
    assert config.actor.lr == 2e-6 and config.trainer.n_epochs == 3
    assert config.rollout.env_path == str(out / "gem_env.py") and config.rollout.max_turns == 6
    sampling = config.rollout.train_sampling_params
    assert sampling.max_new_tokens == 256 and sampling.skip_special_tokens is False
    assert config.rollout.test_sampling_params.skip_special_tokens is False
    assert config.trainer.save_dir == str(out / "checkpoints")


def test_paths_and_names_hydra_would_misread_are_quoted(tmp_path):
    out = tmp_path / "a run's, [odd] folder=1"
    settings = RunSettings(env_ids=(EASY,), model="null", out_dir=out, train_size=2, val_size=1, batch_size=1)
    argv = write_run(settings).argv
    config = compose(list(argv[5:-1]))
    assert config.train_data.path == str(out / "train.jsonl") and config.actor.model_name == "null"
    assert config.trainer.experiment_name == out.name
    assert hydra_value("Qwen/Qwen3-0.6B") == "Qwen/Qwen3-0.6B"  # plain values stay readable


@pytest.mark.parametrize(("option", "message"), [*BAD_INPUT, (["--env", EASY, "--gpus", "8"], "number of GPUs")])
def test_bad_input_fails_before_anything_is_written(tmp_path, option, message):
    assert_refused_before_writing("rl2", tmp_path, option, message)


def test_gem_lists_the_adapter():
    assert_listed("rl2")


def test_this_projects_tests_package_is_the_one_imported():
    import tests

    repo = Path(__file__).resolve().parents[3]
    assert Path(tests.__file__).resolve() == repo / "tests" / "__init__.py"

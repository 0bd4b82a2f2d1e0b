"""``gem roll config``: the ROLL config it writes has every key ROLL's GEM example
(examples/qwen3_agentic_gem/gem_game_guess_the_number.yaml, ROLL 0.3.0) sets, with the types
ROLL's dataclasses declare; Hydra composes it; the printed launch command finds it; bad options
fail before anything is written, naming the fix."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.adapters.roll.conftest import EASY

HARD = "game:GuessTheNumber-v0-hard"
NUMBER = (int, float)
#: Top-level keys of ROLL's GEM example and their types (the example's own interpolation variables,
#: max_tokens_per_step, max_actions_per_traj, default_history_length, env_manager_cls and the
#: templates, end up inside custom_envs, where they are checked below). advantage_clip is left out:
#: ROLL's default (no clipping) keeps GEM's values, and ROLL's dacite refuses an explicit null.
TOP_LEVEL = {
    "exp_name": str, "seed": int, "logging_dir": str, "output_dir": str, "track_with": str,
    "tracker_kwargs": dict, "checkpoint_config": dict, "num_gpus_per_node": int, "max_steps": int,
    "save_steps": int, "logging_steps": int, "eval_steps": int, "resume_from_checkpoint": bool,
    "rollout_batch_size": int, "val_batch_size": int, "sequence_length": int,
    "ppo_epochs": int, "adv_estimator": str,
    "batch_adjust_mode": str, "step_reward_gamma": NUMBER, "init_kl_coef": NUMBER,
    "whiten_advantages": bool, "entropy_loss_coef": NUMBER, "max_grad_norm": NUMBER, "loss_agg_mode": str,
    "pretrain": str, "reward_pretrain": str, "actor_train": dict, "actor_infer": dict, "reference": dict,
    "reward_normalization": dict, "train_env_manager": dict, "val_env_manager": dict, "custom_envs": dict,
}
WORKER = {"model_args": dict, "strategy_args": dict, "device_mapping": str}
ENV_MANAGER = {"max_env_num_per_worker": int, "num_env_groups": int, "group_size": int, "tags": list,
               "num_groups_partition": list}
CUSTOM_ENV = {"env_type": str, "max_steps": int, "max_tokens_per_step": int, "env_manager_cls": str,
              "use_thread_lock": bool, "history_length": int, "agent_system_template": (type(None), str),
              "agent_template": str, "env_config": dict}


def gem(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gem_core.cli", *args], capture_output=True, text=True,
                          timeout=300)


def compose(config: Path):
    from hydra import compose as hydra_compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(config.parent), version_base=None):
        return OmegaConf.to_container(hydra_compose(config_name=config.stem), resolve=True)


def check_types(section: dict, expected: dict, where: str) -> None:
    missing = sorted(set(expected) - set(section))
    assert not missing, f"{where} lacks {missing}"
    for key, kind in expected.items():
        assert isinstance(section[key], kind), f"{where}.{key} = {section[key]!r} is not {kind}"
        assert not (kind is int and isinstance(section[key], bool)), f"{where}.{key} is a bool"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("roll")
    roll_dir, out = root / "ROLL", root / "runs" / "gtn"
    (roll_dir / "examples").mkdir(parents=True)
    result = gem("roll", "config", "--env", EASY, "--env", HARD, "--model", "Qwen/Qwen3-0.6B",
                 "--out", str(out), "--roll-dir", str(roll_dir), "--batch-size", "6", "--n", "2",
                 "--train-size", "60", "--val-size", "12", "--gamma", "0.8", "--max-turns", "7",
                 "--max-tokens-per-turn", "256", "--wrappers", "episode_tracking", "--seed", "5")
    assert result.returncode == 0, result.stderr
    return roll_dir, out, result, compose(out / "gem_roll.yaml")


def test_every_key_of_rolls_example_with_its_type(written):
    *_, config = written
    check_types(config, TOP_LEVEL, "config")
    for worker in ("actor_train", "actor_infer", "reference"):
        check_types(config[worker], WORKER, worker)
    check_types(config["actor_infer"], {"generating_args": dict}, "actor_infer")
    for manager in ("train_env_manager", "val_env_manager"):
        check_types(config[manager], ENV_MANAGER, manager)
        assert sum(config[manager]["num_groups_partition"]) == config[manager]["num_env_groups"]
        assert config[manager]["tags"] == list(config["custom_envs"])
    for tag, env in config["custom_envs"].items():
        check_types(env, CUSTOM_ENV, f"custom_envs.{tag}")


def test_estimator_settings_and_environments(written):
    *_, config = written
    assert config["adv_estimator"] == "step_reinforce" and config["gamma"] == 1.0
    assert config["step_reward_gamma"] == 0.8 and config["whiten_advantages"] is False
    assert config["reward_normalization"] == {"grouping": "batch", "norm_mean_type": "batch",
                                              "norm_std_type": "batch"}
    assert config["pipeline_cls"] == "gem_adapters.roll.pipeline.rebn"
    assert "advantage_clip" not in config
    assert config["batch_adjust_mode"] == "copy"  # whole episodes reach the estimator
    assert config["rollout_batch_size"] == 12 and config["train_env_manager"]["group_size"] == 2
    assert config["train_env_manager"]["num_env_groups"] == 6 and config["max_steps"] == 10
    assert config["val_batch_size"] == 12 and config["val_env_manager"]["group_size"] == 1
    env = config["custom_envs"]["game_GuessTheNumber_v0_easy"]
    assert env["env_type"] == "gem_adapters/game:GuessTheNumber-v0-easy"
    assert env["env_manager_cls"] == "gem_adapters.roll.env_managers.StepConcatEnvManager"
    assert env["max_steps"] == 7 and env["max_tokens_per_step"] == 256
    assert env["env_config"] == {"gem": {"wrappers": ["episode_tracking"], "max_turns": 7}}
    assert config["actor_infer"]["generating_args"]["max_new_tokens"] == 256
    assert config["pretrain"] == "Qwen/Qwen3-0.6B" and config["seed"] == 5


def test_the_templates_render_as_rolls_env_managers_render_them(written):
    *_, config = written
    template = config["custom_envs"]["game_GuessTheNumber_v0_easy"]["agent_template"]
    assert template.format(history="A\nB", current_observation="C") == "Observation:\nA\nB\nC\n"


def test_the_launch_command_finds_the_config_from_rolls_examples_folder(written):
    roll_dir, out, result, _ = written
    command = shlex.split(result.stdout.strip().splitlines()[-1])
    assert command[1:] == ["examples/start_agentic_pipeline.py", "--config_path", command[3],
                           "--config_name", "gem_roll"]
    # ROLL's launcher hands --config_path to hydra.initialize, relative to examples/.
    assert Path(os.path.normpath(roll_dir / "examples" / command[3])) == out.resolve()
    assert not Path(command[3]).is_absolute()


def test_the_config_names_importable_classes_of_ours(written):
    *_, config = written
    import importlib

    from gem_adapters.roll.env_managers import ROLL_MODULES

    env = config["custom_envs"]["game_GuessTheNumber_v0_hard"]
    module, name = env["env_manager_cls"].rsplit(".", 1)
    assert importlib.import_module(module).__name__ == module and name in ROLL_MODULES


def test_step_env_manager_and_other_estimators(tmp_path):
    from gem_adapters.roll.config import RunSettings, roll_config

    settings = RunSettings(env_ids=(EASY,), model="m", out_dir=tmp_path, estimator="grpo", env_manager="step",
                           rollouts_per_start=4, batch_size=8, train_size=8, val_size=8)
    settings.check()
    config = roll_config(settings)
    assert config["pipeline_cls"] == "gem_adapters.roll.pipeline.gem_grpo"
    env = config["custom_envs"]["game_GuessTheNumber_v0_easy"]
    assert env["env_manager_cls"].endswith(".StepEnvManager")
    rendered = env["agent_template"].format(env_instruction="I", history="", current_step=1, current_observation="O")
    assert "I" in rendered and "O" in rendered
    native = roll_config(RunSettings(env_ids=(EASY,), model="m", out_dir=tmp_path, native_normalisation=True,
                                     batch_size=8, train_size=8, val_size=8))
    assert "pipeline_cls" not in native


@pytest.mark.parametrize("args, message", [
    (["--env", "game:GuesTheNumber-v0"], "GuessTheNumber"),
    (["--env", EASY, "--env-manager", "traj"], "traj"),
    (["--env", EASY, "--estimator", "grpo", "--n", "2", "--roll-normalisation"], "roll-normalisation"),
    (["--env", EASY, "--estimator", "rebm"], "rebn"),
    (["--env", EASY, "--estimator", "grpo"], "--n 2"),
    (["--env", EASY, "--batch-size", "0"], "--batch-size"),
    (["--env", EASY, "--wrappers", "concat_chat"], "concat_chat"),
    (["--env", EASY, "--max-tokens-per-turn", "4096", "--response-length", "1024"], "max-tokens-per-turn"),
])
def test_bad_options_fail_before_writing_and_name_the_fix(tmp_path, args, message):
    result = gem("roll", "config", "--model", "m", "--out", str(tmp_path / "out"), *args)
    assert result.returncode != 0 and message in result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_gem_lists_the_roll_adapter():
    result = gem("--help")
    assert result.returncode == 0 and "roll" in result.stdout
    result = gem("roll", "config", "--help")
    assert result.returncode == 0 and "--roll-normalisation" in result.stdout

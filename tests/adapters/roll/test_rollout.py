"""The calls ROLL's env managers make on `gem`, replayed on GEM adapters' environments.

From ROLL's TrajEnvManager / StepEnvManager / StepConcatEnvManager (ROLL 0.3.0):
``gem.make(env_id=env_type, **env_config)`` (with ``seed`` set to the group's seed when present),
``reset(seed=)`` whose info is merged into ROLL's first history record, ``step(action=)`` whose
``info`` minus ``suffix`` is merged into the step's record, ``sample_random_action()`` (ROLL's
random LLM proxy), ``close()``. The episode ends when ``terminated`` is true or after ``max_steps``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import gem_core
from gem_core.wrappers.observation import as_seen  # observations as adapters show them
from gem_adapters.common.session import failure_metrics
from tests.adapters import failing
from gem_adapters.roll import PREFIX
from gem_adapters.roll.rollout import RollEnv, register_envs, roll_env_id
from gem_core import GemError
from tests.adapters.roll.conftest import EASY

#: Keys of ROLL's own per-step records, which an info dict must not overwrite.
ROLL_RECORD_KEYS = {"observation", "actions_left", "messages", "reward", "llm_response", "prompt_ids",
                    "response_ids", "state_hash", "infer_logprobs", "suffix"}


def play_as_roll(env, seed: int, actions, max_steps: int = 50):
    """ROLL's TrajEnvManager.reset/step bookkeeping, on the env ROLL made; returns its history."""
    observation, info = env.reset(seed=seed)
    history = [{"observation": observation, "actions_left": max_steps, "messages": None, **info}]
    terminated = truncated = False
    for step, action in enumerate(actions, start=1):
        observation, reward, terminated, truncated, info = env.step(action=action)
        info.pop("suffix", None)
        history[-1]["reward"] = reward
        history[-1]["llm_response"] = action
        history[-1].update(info)
        history.append({"observation": observation, "actions_left": max_steps - step, "messages": None})
        if terminated or step >= max_steps:
            break
    return history, terminated, truncated


def test_every_gem_adapters_id_is_registered_under_the_prefix(gem):
    from gem.envs.registration import ENV_REGISTRY

    ours = {env_id for env_id in ENV_REGISTRY if env_id.startswith(PREFIX)}
    assert ours == {roll_env_id(spec.id) for spec in gem_core.list_envs()}
    assert len(ours) > 200
    assert ENV_REGISTRY["game:GuessTheNumber-v0"].entry_point.startswith("gem.envs.")  # gem-llm's own
    assert not any(PREFIX in env_id for env_id in ENV_REGISTRY if not env_id.startswith(PREFIX))
    assert register_envs() == 0  # registering again (another import) adds nothing and never raises


def test_registration_happens_on_importing_the_env_managers_in_a_fresh_process():
    code = ("import gem; from gem.envs.registration import ENV_REGISTRY; "
            "assert 'gem_adapters/game:GuessTheNumber-v0-easy' not in ENV_REGISTRY; "
            "import gem_adapters.roll.env_managers; "
            "assert 'gem_adapters/game:GuessTheNumber-v0-easy' in ENV_REGISTRY")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_roll_plays_an_episode_exactly_as_gem_core_does(gem):
    env = gem.make(env_id=roll_env_id(EASY), **{"seed": 11, "max_number": 10})
    assert isinstance(env, RollEnv) and isinstance(env, gem.Env) and env.env_id == roll_env_id(EASY)
    actions = [f"\\boxed{{{guess}}}" for guess in range(1, 11)]
    history, terminated, _ = play_as_roll(env, 4, actions)
    reference = gem_core.make(EASY, max_number=10)
    expected = [as_seen(*reference.reset(seed=4))]
    rewards = []
    for action in actions[:len(history) - 1]:
        observation, reward, terminated, truncated, info = reference.step(action)
        expected.append(as_seen(observation, info, done=terminated or truncated))
        rewards.append(reward)
    assert [record["observation"] for record in history] == expected
    assert [record["reward"] for record in history[:-1]] == rewards
    assert terminated and rewards[-1] > 0  # guessing upwards finds the number
    env.close()


def test_info_holds_only_what_roll_reads(gem):
    env = gem.make(env_id=roll_env_id(EASY), **{})
    observation, info = env.reset(seed=0)
    assert info["env_instruction"] == observation  # StepEnvManager reads history[0]["env_instruction"]
    assert not set(info) & ROLL_RECORD_KEYS
    _, _, _, _, info = env.step(action="no guess here")
    assert set(info) == {"use_tool", "metrics", "metrics_agg_mode", "gem_failure"} and info["use_tool"] is False
    assert all(isinstance(value, float) for value in info["metrics"].values())  # ROLL averages them
    assert info["gem_failure"] == "" and info["metrics"]["gem_failed"] == 0.0
    assert info["metrics"].get("action_is_valid", True)  # StepEnvManager's history lookup
    # the episode's numbers, which ROLL takes from the last step (aggregate_metrics' "last" mode)
    assert {key: info["metrics"][key] for key in info["metrics_agg_mode"]} == {
        "gem_turns": 1.0, "gem_terminated": 1.0, "gem_success": 0.0, "gem_format_error": 1.0,
        **{f"gem_{key}": value for key, value in failure_metrics(None).items()}}
    assert set(info["metrics_agg_mode"].values()) == {"last"}
    env.close()


def test_the_last_step_carries_the_episodes_numbers(gem):
    env = gem.make(env_id=roll_env_id(EASY), **{"max_number": 10})
    history, terminated, _ = play_as_roll(env, 4, [f"\\boxed{{{guess}}}" for guess in range(1, 11)])
    last = history[-2]["metrics"]  # the last step's record (ROLL's final record holds the next observation)
    assert terminated and last["gem_success"] == 1.0 and last["gem_turns"] == len(history) - 1
    assert last["gem_format_error"] == 0.0 and history[-2]["metrics_agg_mode"]["gem_success"] == "last"
    env.close()


def test_a_limit_ends_the_episode_for_roll(gem):
    """ROLL ends an episode only on ``terminated``: a truncated episode reports both."""
    env = gem.make(env_id=roll_env_id(EASY), **{"gem": {"max_turns": 2}})
    history, terminated, truncated = play_as_roll(env, 0, ["\\boxed{0}"] * 10)
    assert len(history) == 3 and terminated and truncated
    assert env.session.stop == "max_turns"
    history, terminated, truncated = play_as_roll(env, 0, ["\\boxed{0}"] * 10)  # the same env again
    assert len(history) == 3 and terminated and truncated


def test_random_actions_play_an_episode(gem):
    env = gem.make(env_id=roll_env_id(EASY), **{})
    env.reset(seed=3)
    for _ in range(30):
        action = env.sample_random_action()
        assert isinstance(action, str) and action
        *_, terminated, _, _ = env.step(action=action)
        if terminated:
            break
    assert terminated
    env.close()
    env.close()  # ROLL may close twice; the second is a no-op


def test_wrappers_and_tools(gem):
    env = gem.make(env_id=roll_env_id("math:Arithmetic-v0+Tool"), **{"gem": {"wrappers": ["episode_tracking"]}})
    env.reset(seed=1)
    observation, reward, terminated, _, info = env.step(action="<python>print(6 * 7)</python>")
    assert "42" in observation and info["use_tool"] is True and not terminated
    assert info["metrics"]["tool_use_counter"] == 1.0 and info["metrics"]["step_counter"] == 1.0
    env.close()


def test_an_environment_that_fails_fails_its_episode_and_the_next_gets_a_fresh_one(gem, caplog):
    from gem.envs.registration import ENV_REGISTRY

    with failing.registered() as env_id:
        try:
            assert register_envs() == 1
            env = gem.make(env_id=roll_env_id(env_id), **{})
            history, terminated, truncated = play_as_roll(env, 0, ["a", "b", "c"])
            assert terminated and truncated and len(history) == 3
            assert [record["reward"] for record in history[:-1]] == [failing.FIRST_REWARD, 0.0]
            assert [record["gem_failure"] for record in history[:-1]] == ["", "error"]
            assert history[1]["metrics"]["gem_failed"] == 1.0 and history[1]["metrics"]["gem_failed_error"] == 1.0
            assert failing.MESSAGE in caplog.text
            first = env.session.env
            history, _, _ = play_as_roll(env, 1, ["a"])  # ROLL plays its next episode on the same env
            assert env.session.env is not first and history[0]["reward"] == failing.FIRST_REWARD
            from gem_adapters.roll.env_managers import episode_failure

            assert episode_failure(history) == ""
        finally:
            ENV_REGISTRY.pop(roll_env_id(env_id), None)


def test_a_deadline_that_passes_while_roll_generates_ends_the_episode_at_the_next_step(gem):
    import time

    env = gem.make(env_id=roll_env_id(EASY), **{"gem": {"episode_deadline": 0.2}})
    env.reset(seed=0)
    time.sleep(0.3)  # ROLL's generation
    _, reward, terminated, truncated, info = env.step(action="\\boxed{1}")
    assert terminated and truncated and reward == 0.0 and info["gem_failure"] == "deadline"
    assert env.session.failure.phase == "policy"
    env.reset(seed=0)  # the next episode has its own clock
    *_, info = env.step(action="\\boxed{1}")
    assert info["gem_failure"] == ""
    env.close()


def test_gem_env_managers_mark_a_failed_episodes_samples():
    """What GEM's subclasses of ROLL's env managers add to the samples ROLL's formulate_rollouts
    makes of an episode (ROLL itself runs in scripts/roll_by_hand.py)."""
    import numpy as np

    from gem_adapters.roll.env_managers import mark_failure

    class Samples:  # the two members of ROLL's DataProto that mark_failure uses
        non_tensor_batch = {"step": np.array([0, 1], dtype=object)}

        def __len__(self):
            return 2

    history = [{"reward": 0.25, "gem_failure": ""}, {"reward": 0.0, "gem_failure": "sandbox"}, {"observation": "x"}]
    samples = Samples()
    assert mark_failure(samples, history).non_tensor_batch["gem_failure"].tolist() == ["sandbox", "sandbox"]
    history[1]["gem_failure"] = ""
    assert mark_failure(samples, history).non_tensor_batch["gem_failure"].tolist() == ["", ""]


@pytest.mark.parametrize("config, message", [
    ({"gem": {"wrapers": []}}, "wrapers"),
    ({"gem": {"wrappers": ["concat"]}}, "concat"),
    ({"gem": {"max_tokens_per_turn": 64}}, "max_tokens_per_step"),
    ({"max_numbr": 3}, "max_numbr"),
])
def test_configuration_mistakes_name_the_fix(gem, config, message):
    with pytest.raises(GemError, match=message):
        gem.make(env_id=roll_env_id(EASY), **config)


def test_roll_itself_missing_names_how_to_install_it():
    from gem_adapters.roll import env_managers

    try:
        import roll  # noqa: F401
        pytest.skip("ROLL is installed here")
    except ImportError:
        pass
    with pytest.raises(GemError, match="alibaba/ROLL"):
        env_managers.StepConcatEnvManager
    with pytest.raises(GemError, match="alibaba/ROLL"):
        import gem_adapters.roll.pipeline  # noqa: F401
    with pytest.raises(AttributeError, match="StepEnvManager"):
        env_managers.NoSuchManager


def test_the_projects_tests_package_wins():
    import pathlib

    import tests

    assert pathlib.Path(tests.__file__).resolve().parent == pathlib.Path(__file__).resolve().parents[2]


def test_every_offline_id_plays_through_gem_make_or_names_what_it_needs(gem):
    """Each offline id, made as ROLL makes it: reset, a random action, a step, close. An id whose
    optional dependency is missing here (or that needs a keyword) raises a GemError naming it."""
    played, refused = [], {}
    for spec in gem_core.list_envs():
        if not spec.offline:
            continue
        try:
            env = gem.make(env_id=roll_env_id(spec.id), **{})
            observation, _ = env.reset(seed=0)
            step = env.step(action=env.sample_random_action())
            env.close()
        except GemError as error:
            refused[spec.id] = str(error)
            continue
        assert isinstance(observation, str) and observation
        assert set(step[4]) == {"use_tool", "metrics", "metrics_agg_mode", "gem_failure"}
        assert step[4]["gem_failure"] == "", spec.id  # no environment breaks on a random action
        played.append(spec.id)
    assert len(played) >= 160, refused
    # reasoning-gym 0.1.23 (gem-llm 0.0.4's pin) lacks two datasets, which are refused, not broken.
    assert "reasoning-gym" in refused["rg:coin_flip"] and "rg:coin_flip" not in played

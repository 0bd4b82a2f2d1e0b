"""The environment file under RL2's own rollout code: ``RL2.workers.rollout.Rollout`` loads it from
``rollout.env_path`` (its ``prepare_environment``) and plays the dataset's rows with its
``__call__``, which gathers every episode, packs them with ``pack_tensor_dicts`` and returns the
tensor dict and ``cu_seqs`` the trainer uses. The Rollout object is made without its ``__init__``,
which starts sglang servers; generation is the scripted model (conftest.py) in place of
``async_generate``, and the router's memory requests are skipped. Stood in for, at import only:
sglang, sglang_router, flash_attn, ring_flash_attn."""

from __future__ import annotations

import re
import sys

import gem_core
import pytest
import torch
from gem_core.errors import GemError
from gem_core.wrappers.observation import as_seen
from omegaconf import OmegaConf

from gem_adapters.common.settings import RunSettings
from gem_adapters.common.turns import turn_end_positions
from gem_adapters.rl2.advantages import gem_advantages
from gem_adapters.rl2.config import env_file_text, write_run
from tests.adapters.rl2.conftest import EASY, ScriptedModel
from tests.adapters import failing


@pytest.fixture
def rl2_rollout(monkeypatch, smollm2_tokenizer, smollm2_tokenizer_dir, gloo):
    """``make(env_file, model=..., max_turns=...)``: RL2's Rollout with the environment file loaded
    by RL2, generating with ``model``."""
    import RL2.workers.rollout as rollout_module

    requests = []
    monkeypatch.setattr(rollout_module, "make_request", lambda *args, **kwargs: requests.append(args))

    class TensorParallel:
        def get_local_rank(self):
            return 0

    def make(env_file, model, *, max_turns=10, responses_per_prompt=1, max_new_tokens=64):
        monkeypatch.setattr(rollout_module, "async_generate", model)
        rollout = rollout_module.Rollout.__new__(rollout_module.Rollout)
        rollout.config = OmegaConf.create({
            "env_path": str(env_file), "max_turns": max_turns, "responses_per_prompt": responses_per_prompt,
            "dynamic_filtering": False})
        rollout.prepare_environment()  # RL2 executes the environment file
        rollout.tokenizer = smollm2_tokenizer
        rollout.router_url = rollout.worker_url = "http://scripted"
        rollout.train_sampling_params = {"temperature": 1.0, "max_new_tokens": max_new_tokens,
                                         "skip_special_tokens": False, "no_stop_trim": True}
        rollout.test_sampling_params = dict(rollout.train_sampling_params)
        rollout.device_mesh = {"tp": TensorParallel()}
        return rollout

    return make


def settings(tmp_path, model, **options):
    from gem_adapters.common.options import EpisodeOptions

    return RunSettings(env_ids=(EASY,), model=str(model), out_dir=tmp_path / "run", train_size=4, val_size=2,
                       batch_size=2, options=EpisodeOptions.from_config(options))


def rows(written):
    """The training rows as RL2's RLDataset and dataloader collate them."""
    from RL2.datasets import RLDataset

    config = OmegaConf.create({"path": str(written.splits.train), "responses_per_prompt": 1, "max_length": None})
    dataset = RLDataset(config, tokenizer=None)
    return dataset.collate_fn([dataset[i] for i in range(len(dataset))])


def test_rl2_rollout_plays_gem_episodes_with_each_turns_reward_on_its_last_action_token(
        tmp_path, rl2_rollout, smollm2_tokenizer, smollm2_tokenizer_dir):
    written = write_run(settings(tmp_path, smollm2_tokenizer_dir))
    data = rows(written)
    assert all("prompt" not in row and row["extra_info"]["env_id"] == EASY for row in data)
    model = ScriptedModel(smollm2_tokenizer)
    tensor_dict, cu_seqs = rl2_rollout(written.file, model)(data, True, 1)

    assert cu_seqs.tolist() == [0, 1, 2, 3, 4]  # every episode stays one sequence
    for row, extra in enumerate(data):
        mask = tensor_dict["action_mask"][row]
        ends = turn_end_positions(mask)
        # replay the episode by hand with the answers read back from the tokens: same rewards
        env = gem_core.make(EASY)
        observation, info = env.reset(seed=extra["extra_info"]["seed"])
        prompt = smollm2_tokenizer.decode(tensor_dict["states"][row][:int(mask.nonzero()[0]) + 1])
        assert prompt.startswith(smollm2_tokenizer.apply_chat_template(
            [{"role": "user", "content": as_seen(observation, info)}], tokenize=False, add_generation_prompt=True))
        expected = []
        for end, start in zip(ends, [int(mask.nonzero()[0])] + [e + 1 for e in ends[:-1]]):
            answer_ids = tensor_dict["actions"][row][start:end + 1][mask[start:end + 1].bool()]
            answer = smollm2_tokenizer.decode(answer_ids, skip_special_tokens=True)
            observation, reward, terminated, truncated, info = env.step(answer)
            expected.append(reward)
        assert terminated or truncated
        rewards = tensor_dict["rewards"][row]
        assert rewards[ends].tolist() == pytest.approx(expected)
        assert float(rewards.abs().sum()) == pytest.approx(sum(abs(r) for r in expected))  # nothing elsewhere
        assert expected[-1] > 0 and len(expected) >= 2  # bisection wins after a few guesses
    # the text between turns is the chat template's, with each answer's end of turn once
    later = [smollm2_tokenizer.decode(call["states"]) for call in model.calls]
    second = next(text for text in later if text.count("<|im_start|>assistant") == 2)
    assert re.search(r"\\boxed\{\d+\}\.<\|im_end\|>\n<\|im_start\|>user\n", second)
    assert second.endswith("<|im_start|>assistant\n") and "<|im_end|><|im_end|>" not in second

    # and GEM's estimator reads those turns back: one advantage per turn
    config = OmegaConf.create({"gamma": 0.9, "responses_per_prompt": 1})
    gem_advantages("rebn", config, tensor_dict, cu_seqs)
    from gem_core.estimators.dispatch import estimate_flat

    per_turn = [tensor_dict["rewards"][row][turn_end_positions(tensor_dict["action_mask"][row])].tolist()
                for row in range(len(data))]
    flat = estimate_flat("rebn", torch.tensor(sum(per_turn, [])).numpy(), [len(t) for t in per_turn], gamma=0.9)
    got = torch.cat([tensor_dict["advantages"][row][turn_end_positions(tensor_dict["action_mask"][row])]
                     for row in range(len(data))])
    assert got.tolist() == pytest.approx(flat.tolist(), abs=1e-5)


def test_wrappers_apply_and_max_turns_ends_the_episode(tmp_path, rl2_rollout, smollm2_tokenizer,
                                                       smollm2_tokenizer_dir):
    written = write_run(settings(tmp_path, smollm2_tokenizer_dir, wrappers=["python_tool"], max_turns=2))
    script = ["<python>print(6 * 7)</python>", "\\boxed{5}"]
    model = ScriptedModel(smollm2_tokenizer, answer=lambda prompt: script[prompt.count("<|im_start|>assistant") - 1])
    tensor_dict, cu_seqs = rl2_rollout(written.file, model, max_turns=10)(rows(written)[:1], True, 1)
    assert len(turn_end_positions(tensor_dict["action_mask"][0])) == 2  # GEM's max_turns, not RL2's 10
    second = smollm2_tokenizer.decode(model.calls[1]["states"])
    assert "42" in second.rsplit("<|im_start|>user", 1)[-1]  # the tool wrapper ran the code


def test_an_env_that_raises_mid_episode_fails_it_and_the_batch_goes_on(tmp_path, rl2_rollout, smollm2_tokenizer,
                                                                       smollm2_tokenizer_dir, caplog):
    """Under GEM's estimator the failed step's reward is NaN, which the estimator reads as the
    failure: the episode's tokens lose their action_mask, the other episode's turns keep theirs."""
    from gem_adapters.rl2 import advantages

    written = write_run(settings(tmp_path, smollm2_tokenizer_dir))
    advantages.install("rebn")
    try:
        with failing.registered() as failing_env:
            data = [{"extra_info": {"env_id": failing_env, "seed": 0}}, rows(written)[0]]
            tensor_dict, cu_seqs = rl2_rollout(written.file, ScriptedModel(smollm2_tokenizer))(data, True, 1)
        failed = tensor_dict["rewards"][0][turn_end_positions(tensor_dict["action_mask"][0])]
        assert failed[0] == failing.FIRST_REWARD and failed[1].isnan()  # ended at the failing step
        fine = tensor_dict["rewards"][1][turn_end_positions(tensor_dict["action_mask"][1])]
        assert fine[-1] > 0
        assert failing.MESSAGE in caplog.text
        stats = gem_advantages("rebn", OmegaConf.create({"gamma": 0.9, "responses_per_prompt": 1}), tensor_dict, cu_seqs)
        assert not tensor_dict["action_mask"][0].any() and not tensor_dict["advantages"][0].any()
        assert stats["failed_rate"] == 0.5 and stats["failed_error"] == 0.5 and stats["failed_sandbox"] == 0.0
    finally:
        advantages.uninstall()


def test_under_rl2s_own_estimator_a_failed_episode_gets_reward_0_and_a_warning(
        tmp_path, rl2_rollout, smollm2_tokenizer, smollm2_tokenizer_dir, caplog):
    from gem_adapters.rl2 import rollout

    written = write_run(settings(tmp_path, smollm2_tokenizer_dir))
    rollout._warned = False
    with failing.registered() as failing_env, caplog.at_level("WARNING", logger="gem_adapters.rl2"):
        data = [{"extra_info": {"env_id": failing_env, "seed": 0}}]
        tensor_dict, _ = rl2_rollout(written.file, ScriptedModel(smollm2_tokenizer))(data, True, 1)
    assert tensor_dict["rewards"][0][turn_end_positions(tensor_dict["action_mask"][0])].tolist() == [
        failing.FIRST_REWARD, 0.0]
    assert "cannot leave it out" in caplog.text


def test_a_deadline_that_passes_while_rl2_generates_ends_the_episode_at_the_next_step(
        tmp_path, rl2_rollout, smollm2_tokenizer, smollm2_tokenizer_dir):
    import asyncio

    from gem_adapters.rl2 import advantages, failures

    written = write_run(settings(tmp_path, smollm2_tokenizer_dir, episode_deadline=0.3))
    slow = ScriptedModel(smollm2_tokenizer)

    async def generate(router_url, states, sampling_params):
        if slow.calls:
            await asyncio.sleep(0.5)  # a slow second generation
        return await ScriptedModel.__call__(slow, router_url, states, sampling_params)

    advantages.install("rebn")
    try:
        tensor_dict, _ = rl2_rollout(written.file, generate)(rows(written)[:1], True, 1)
    finally:
        advantages.uninstall()
    ends = turn_end_positions(tensor_dict["action_mask"][0])
    assert len(ends) == 2 and tensor_dict["rewards"][0][ends[-1]].isnan()
    assert failures.failures_since(1) == ["deadline"]


def test_an_episode_rl2_cuts_at_its_own_max_turns_closes_its_environment(tmp_path, rl2_rollout, smollm2_tokenizer,
                                                                          smollm2_tokenizer_dir, monkeypatch):
    import gc

    from gem_adapters.common.session import EnvSession

    closed = []
    monkeypatch.setattr(EnvSession, "close", lambda self: closed.append(self.env_id))
    written = write_run(settings(tmp_path, smollm2_tokenizer_dir))
    tensor_dict, _ = rl2_rollout(written.file, ScriptedModel(smollm2_tokenizer), max_turns=1)(rows(written), True, 1)
    assert [len(turn_end_positions(mask)) for mask in tensor_dict["action_mask"]] == [1] * 4  # RL2 stopped them
    gc.collect()
    assert closed == [EASY] * 4  # when RL2 dropped the rows' extra_info


def test_bad_rows_and_ids_are_refused_with_the_fix(tmp_path, rl2_rollout, smollm2_tokenizer, smollm2_tokenizer_dir):
    import asyncio

    written = write_run(settings(tmp_path, smollm2_tokenizer_dir))
    env = rl2_rollout(written.file, ScriptedModel(smollm2_tokenizer)).env
    with pytest.raises(GemError, match="GuessTheNumber"):  # an unknown id names the closest ones
        asyncio.run(env.reset({"env_id": "game:GuessTheNumbr-v0-easy", "seed": 0}))
    with pytest.raises(GemError, match="gem rl2 config"):
        asyncio.run(env.reset({}))
    with pytest.raises(GemError, match="'prompt'"):  # a row with a prompt: RL2 skips reset
        asyncio.run(env.step("Hello", "\\boxed{1}", {}))


def test_an_env_file_without_gem_installed_says_how_to_install_it(tmp_path, monkeypatch):
    import importlib.util

    path = tmp_path / "gem_env.py"
    path.write_text(env_file_text(settings(tmp_path, "some/model")))
    monkeypatch.setitem(sys.modules, "gem_adapters.rl2.rollout", None)  # as if GEM were missing
    spec = importlib.util.spec_from_file_location("custom_module", path)
    with pytest.raises(ImportError, match=r"pip install 'gem-adapters\[rl2\]'"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_the_env_file_refuses_bad_options(tmp_path, smollm2_tokenizer_dir):
    import importlib.util

    path = tmp_path / "gem_env.py"
    path.write_text(env_file_text(settings(tmp_path, smollm2_tokenizer_dir))
                    .replace("'wrappers': []", "'wrappers': ['concat_chat']"))
    spec = importlib.util.spec_from_file_location("custom_module", path)
    with pytest.raises(GemError, match="concat_chat"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_a_step_without_the_answers_token_ids_is_refused(tmp_path, rl2_rollout, smollm2_tokenizer,
                                                         smollm2_tokenizer_dir):
    """The answer's ids come from RL2's generation, which the environment file wraps: text alone
    cannot tell a cut answer ending in '<' from one that ended its turn."""
    import asyncio

    written = write_run(settings(tmp_path, smollm2_tokenizer_dir))
    env = rl2_rollout(written.file, ScriptedModel(smollm2_tokenizer)).env
    state, extra_info = asyncio.run(env.reset({"env_id": EASY, "seed": 0}))
    with pytest.raises(GemError, match="token ids of the answer"):
        asyncio.run(env.step(state, "\\boxed{3}<|im_end|>", extra_info))

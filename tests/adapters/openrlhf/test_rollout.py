"""The GEM agent file, loaded by OpenRLHF's own loader and driven by OpenRLHF's own
MultiTurnAgentExecutor, plays GEM episodes; its output goes through OpenRLHF's own conversion
into an Experience. Stood in for: the model server (a scripted engine) and, at import only,
vllm (see conftest.py and standins.py)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator
from openrlhf.trainer.ray.vllm_engine import _load_agent_executor
from openrlhf.utils.agent import MultiTurnAgentExecutor

import gem_core
from gem_core.wrappers.observation import as_seen  # observations as adapters show them
from tests.adapters import failing
from gem_adapters.common.options import EpisodeOptions
from gem_adapters.common.settings import RunSettings
from gem_adapters.common.turns import turn_end_positions
from gem_adapters.openrlhf.config import agent_file_text
from gem_adapters.openrlhf.labels import decode_label, encode_label
from gem_core import GemError
from tests.adapters.openrlhf.conftest import Guesser, SamplingParams, ScriptedEngine

EASY = "game:GuessTheNumber-v0-easy"
MAX_LEN = 2048


def agent_file(tmp_path: Path, **options) -> Path:
    settings = RunSettings(env_ids=(EASY,), model="m", out_dir=tmp_path, options=EpisodeOptions(**options))
    path = tmp_path / f"agent_{len(list(tmp_path.glob('agent_*.py')))}.py"
    path.write_text(agent_file_text(settings))
    return path


def play(executor, engine, tokenizer, label: str, *, max_len: int = MAX_LEN):
    """One sample through the executor, then through OpenRLHF's conversion into an Experience."""
    response = asyncio.run(executor.execute(prompt="(logged prompt)", label=label, sampling_params=SamplingParams(),
                                            max_length=max_len, hf_tokenizer=tokenizer, llm_engine=engine))
    experience = SamplesGenerator._process_response_into_experience(SimpleNamespace(), response, max_len=max_len)
    return response, experience


def replay(env_id: str, seed: int, answers: list[str]) -> tuple[list[str], list[float], str]:
    """The same answers played on gem_core directly: observations, rewards, how it stopped."""
    env = gem_core.make(env_id)
    observations, rewards = [as_seen(*env.reset(seed=seed))], []
    stop = "open"
    for answer in answers:
        observation, reward, terminated, truncated, info = env.step(answer)
        observations.append(as_seen(observation, info, done=terminated or truncated))
        rewards.append(reward)
        if terminated or truncated:
            stop = "terminated" if terminated else "truncated"
            break
    return observations, rewards, stop


def test_openrlhf_loads_the_agent_file_and_its_executor_plays_a_gem_episode(tmp_path, engine_for, smollm2_tokenizer):
    executor = _load_agent_executor(str(agent_file(tmp_path)))
    assert isinstance(executor, MultiTurnAgentExecutor)
    guesser = Guesser()
    engine = engine_for(guesser)
    response, experience = play(executor, engine, smollm2_tokenizer, encode_label(EASY, 3))

    observations, rewards, stop = replay(EASY, 3, guesser.answers)
    played = decode_label(experience.labels[0])
    assert played == {"env_id": EASY, "seed": 3, "turn_rewards": rewards, "stop": stop}
    assert len(rewards) >= 2 and stop in ("terminated", "truncated")
    assert experience.rewards.tolist() == pytest.approx([sum(rewards)])
    # the episode's numbers, which OpenRLHF logs from info (the guesser finds the number)
    assert {key: experience.info[key].tolist() for key in ("gem_turns", "gem_terminated", "gem_success",
                                                             "gem_format_error")} == {
        "gem_turns": [len(rewards)], "gem_terminated": [float(stop == "terminated")],
        "gem_success": [1.0], "gem_format_error": [0.0]}

    # The tokens: the first observation through the chat template, then each answer (mask 1)
    # followed by the next observation as a user message (mask 0).
    tokens = experience.sequences[0].tolist()
    mask = experience.action_mask[0].tolist()  # aligned with tokens[1:]
    decode = lambda ids: smollm2_tokenizer.decode(ids, skip_special_tokens=False)  # noqa: E731
    first = smollm2_tokenizer.apply_chat_template([{"role": "user", "content": observations[0]}], tokenize=False,
                                                  add_generation_prompt=True)
    ends = turn_end_positions(torch.tensor(mask))
    assert len(ends) == len(rewards)
    runs, position = [], 0
    spans = []
    for start, end in response["action_ranges"]:
        spans.append((position, start))
        runs.append((start, end))
        position = end
    assert decode(tokens[:runs[0][0]]) == first
    for turn, (start, end) in enumerate(runs):
        assert all(mask[i - 1] == 1 for i in range(start, end))
        assert decode(tokens[start:end]) == guesser.answers[turn] + "<|im_end|>"
        gap = tokens[end:runs[turn + 1][0]] if turn + 1 < len(runs) else tokens[end:]
        assert all(mask[i - 1] == 0 for i in range(end, end + len(gap)))
        if turn + 1 < len(runs):
            assert decode(gap) == ("\n<|im_start|>user\n" + observations[turn + 1]
                                   + "<|im_end|>\n<|im_start|>assistant\n")
        else:
            assert gap == []  # nothing follows the last answer
    assert engine.calls[0]["prompt_ids"] == tokens[:runs[0][0]]


def test_max_turns_and_the_token_limit_per_turn(tmp_path, engine_for, smollm2_tokenizer):
    executor = _load_agent_executor(str(agent_file(tmp_path, max_turns=2, max_tokens_per_turn=6)))
    engine = engine_for(lambda prompt: "\\boxed{1} then more words here")  # 6 tokens: \boxed{1}
    response, experience = play(executor, engine, smollm2_tokenizer, encode_label(EASY, 3))
    played = decode_label(experience.labels[0])
    assert played["stop"] == "max_turns" and len(played["turn_rewards"]) == 2
    assert [call["max_tokens"] for call in engine.calls] == [6, 6]
    assert [end - start for start, end in response["action_ranges"]] == [6, 6]
    assert played["turn_rewards"] == replay(EASY, 3, ["\\boxed{1}"] * 2)[1]
    assert response["truncated"]  # OpenRLHF's own flag: the last answer hit the limit


def test_the_episode_budget_of_openrlhf_ends_the_episode(tmp_path, engine_for, smollm2_tokenizer):
    executor = _load_agent_executor(str(agent_file(tmp_path)))
    engine = engine_for(lambda prompt: "\\boxed{1} " * 20)
    _, experience = play(executor, engine, smollm2_tokenizer, encode_label(EASY, 3), max_len=200)
    played = decode_label(experience.labels[0])
    assert played["stop"] == "max_length" and len(played["turn_rewards"]) >= 1
    assert experience.sequences.shape[1] <= 200


@pytest.fixture
def failing_env():
    with failing.registered() as env_id:
        yield env_id


def test_an_env_that_raises_mid_episode_fails_it_and_the_batch_goes_on(tmp_path, engine_for, smollm2_tokenizer,
                                                                       failing_env, caplog):
    executor = _load_agent_executor(str(agent_file(tmp_path)))

    async def batch():
        return await asyncio.gather(*[
            executor.execute(prompt="p", label=label, sampling_params=SamplingParams(), max_length=MAX_LEN,
                             hf_tokenizer=smollm2_tokenizer, llm_engine=engine_for(Guesser()))
            for label in (encode_label(failing_env, 0), encode_label(EASY, 3))])

    failed, fine = asyncio.run(batch())
    played = decode_label(failed["label"])
    assert played["stop"] == "failed" and played["turn_rewards"] == [] and failed["reward"] == 0.0
    assert (played["failure"]["kind"], played["failure"]["phase"], played["failure"]["turn"]) == ("error", "step", 1)
    assert len(failed["action_ranges"]) == 2  # what was played is kept; GEM's estimator masks it in the trainer
    assert failed["extra_logs"]["gem_failed"] == 1.0 and failed["extra_logs"]["gem_failed_error"] == 1.0
    assert decode_label(fine["label"])["stop"] in ("terminated", "truncated") and "failure" not in fine["label"]
    assert failing.MESSAGE in caplog.text


class StallingEngine(ScriptedEngine):
    """Answers the first turn, then hangs (a wedged inference server)."""

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        if self.calls:
            await asyncio.sleep(60)
        return await super().generate(prompt_token_ids, sampling_params, multi_modal_data)


def test_an_episode_past_its_deadline_fails_inside_openrlhfs_loop(tmp_path, smollm2_tokenizer):
    import time

    executor = _load_agent_executor(str(agent_file(tmp_path, episode_deadline=0.5)))
    engine = StallingEngine(smollm2_tokenizer, Guesser())
    started = time.monotonic()
    response, experience = play(executor, engine, smollm2_tokenizer, encode_label("game:GuessTheNumber-v0-hard", 3))
    assert time.monotonic() - started < 10
    played = decode_label(experience.labels[0])
    assert played["stop"] == "failed" and played["failure"]["kind"] == "deadline"
    assert (played["failure"]["phase"], played["failure"]["turn"]) == ("policy", 1)
    first_prompt = engine.calls[0]["prompt_ids"]
    assert response["observation_tokens"][:len(first_prompt)] == first_prompt  # the first turn, as played
    assert len(response["action_ranges"]) == 1 and experience.action_mask.any()
    assert experience.info["gem_failed_deadline"].tolist() == [1.0]


def test_a_tool_wrapped_environment(tmp_path, engine_for, smollm2_tokenizer):
    executor = _load_agent_executor(str(agent_file(tmp_path, wrappers=["python_tool"], max_turns=2)))
    answers = iter(["<python>print(6 * 7)</python>", "\\boxed{5}"])
    engine = engine_for(lambda prompt: next(answers))
    _, experience = play(executor, engine, smollm2_tokenizer, encode_label(EASY, 3))
    second_prompt = smollm2_tokenizer.decode(engine.calls[1]["prompt_ids"])
    assert "42" in second_prompt.rsplit("<|im_start|>user", 1)[-1]
    assert decode_label(experience.labels[0])["stop"] == "max_turns"


def test_a_row_without_a_gem_label_is_refused(tmp_path, engine_for, smollm2_tokenizer):
    executor = _load_agent_executor(str(agent_file(tmp_path)))
    with pytest.raises(GemError, match="--data.label_key label"):
        play(executor, engine_for(Guesser()), smollm2_tokenizer, "42")
    with pytest.raises(GemError, match="GuessTheNumber"):  # an unknown id names the closest ones
        play(executor, engine_for(Guesser()), smollm2_tokenizer, encode_label("game:GuessTheNumbr-v0-easy", 0))


def test_an_agent_file_without_gem_installed_says_how_to_install_it(tmp_path, monkeypatch):
    path = agent_file(tmp_path)
    monkeypatch.setitem(sys.modules, "gem_adapters.openrlhf.rollout", None)  # as if GEM were missing
    with pytest.raises(ImportError, match=r"pip install 'gem-adapters\[openrlhf\]'"):
        _load_agent_executor(str(path))


def test_the_agent_file_refuses_bad_options(tmp_path):
    path = tmp_path / "agent.py"
    path.write_text(agent_file_text(RunSettings(env_ids=(EASY,), model="m", out_dir=tmp_path))
                    .replace("'wrappers': []", "'wrappers': ['concat_chat']"))
    with pytest.raises(GemError, match="concat_chat"):
        _load_agent_executor(str(path))
    assert json.loads(encode_label(EASY, 1)) == {"env_id": EASY, "seed": 1}


def test_a_template_that_rewrites_past_turns_still_gives_the_text_between_turns(smollm2_tokenizer):
    """Like Qwen3's template, which shows reasoning only in the turn after the last user message."""
    import copy

    from gem_adapters.openrlhf.rollout import ChatFormat

    tokenizer = copy.deepcopy(smollm2_tokenizer)
    tokenizer.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
        "{% if m['role'] == 'assistant' and loop.last %}<think></think>{% endif %}"
        "{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    chat = ChatFormat(tokenizer)
    answer = tokenizer.encode("<think>hmm</think>\\boxed{3}<|im_end|>", add_special_tokens=False)
    assert chat.after_answer(answer, "Higher.") == "\n<|im_start|>user\nHigher.<|im_end|>\n<|im_start|>assistant\n"
    cut = tokenizer.encode("\\boxed{3", add_special_tokens=False)  # an answer cut by a token limit
    assert chat.after_answer(cut, "Higher.").startswith("<|im_end|>\n<|im_start|>user\nHigher.")

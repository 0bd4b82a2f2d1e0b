"""The ``gem_agent`` loop, instantiated the way verl's agent-loop worker does, in front of a
scripted model server standing in for verl's server manager (token ids in and out): a plain
``openai`` SDK program plays through the real gateway, ``gem serve``'s sessions and the real
environment; its episodes become verl outputs whose mask is 1 exactly on the sampled ids, and a
program that crashes or hangs gives a failed episode that trains nothing. Seconds; the launcher
test (test_train.py) runs the loop inside verl's own run."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from gem_adapters.verl.config import RunSettings, write_run
from tests.adapters.verl.conftest import ScriptedServer, chat_tokenizer, compose_config  # noqa: F401 (a fixture)
from tests.tito.checks import runs

EASY = "game:GuessTheNumber-v0-easy"
GUESSES = iter(range(10**6))


def openai_loop(task):
    """The plain ``openai`` SDK loop of docs/gateway.md."""
    import openai

    client = openai.OpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
    messages = [{"role": "user", "content": task.observation}]
    while True:
        answer = client.chat.completions.create(model=task.model, messages=messages).choices[0].message.content
        result = task.step(answer)
        if result.done:
            return
        messages += [{"role": "assistant", "content": answer}, {"role": "user", "content": result.observation}]


def crashes(task):
    import openai

    openai.OpenAI(base_url=task.base_url, api_key=task.api_key).chat.completions.create(
        model=task.model, messages=[{"role": "user", "content": task.observation}])
    raise RuntimeError("the harness broke")


def hangs(task):
    time.sleep(4)


def config_for(tmp_path, agent: str, **overrides):
    written = write_run(RunSettings(env_ids=(EASY,), model="/models/tiny", out_dir=tmp_path, train_size=4, val_size=2,
                                    batch_size=2, prompt_length=256, response_length=128, agent=agent,
                                    agent_timeout=overrides.pop("timeout", 60.0)))
    rows = [json.loads(line) for line in written.train.read_text().splitlines()]
    assert {row["agent_name"] for row in rows} == {"gem_agent"}
    return compose_config(written.config)


def play(config, tokenizer, program, seed=3, logprobs=True):
    import hydra
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from gem_adapters.verl import harness

    harness._services.clear()  # each test its own program
    server = ScriptedServer(tokenizer, lambda prompt: f"I guess \\boxed{{{next(GUESSES) % 10 + 1}}}", logprobs=logprobs)

    async def go():
        loop = hydra.utils.instantiate(
            config=_agent_loop_registry["gem_agent"], trainer_config=DictConfigWrap(config=config),
            server_manager=server, tokenizer=tokenizer, processor=None, hf_model_type=None, dataset_cls=RLHFDataset,
            data_config=DictConfigWrap(config.data), tools=ToolListWrap([]))
        return await loop.run({"temperature": 1.0, "top_p": 1.0, "logprobs": logprobs},
                              extra_info={"env_id": EASY, "seed": seed, "index": 0}, raw_prompt=[], index=0)

    from gem_serve.gateway import runs

    original = runs.python_program
    runs.python_program = lambda spec: program  # the program named in the config, as this test's callable
    try:
        return asyncio.run(go()), server
    finally:
        runs.python_program = original


def test_the_programs_episode_trains_exactly_the_sampled_ids(tmp_path, chat_tokenizer):
    import gem_core

    config = config_for(tmp_path, "tests:openai_loop")
    output, server = play(config, chat_tokenizer, openai_loop)
    assert output.extra_fields["gem_failure"] is None and output.extra_fields["gem_segments"] == 1
    assert len(output.prompt_ids) + len(output.response_ids) <= 256 + 128
    ids, mask = output.response_ids, output.response_mask
    spans = runs(mask)
    kept = server.generated[:len(spans)]
    assert [ids[a:b] for a, b in spans] == kept  # mask 1 on exactly what the server sampled, turn by turn
    assert spans[0][0] == 0 and output.prompt_ids == server.calls[0]["prompt_ids"]
    for (a, b), call in zip(spans[1:], server.calls[1:]):  # each prompt is the sequence up to that answer
        assert list(output.prompt_ids) + list(ids[:a]) == call["prompt_ids"]
    assert [output.response_logprobs[a:b] for a, b in spans] == [[-0.25 - 0.01 * i for i in range(len(g))]
                                                                 for g in kept]
    env = gem_core.make(EASY)  # the rewards are the environment's, turn by turn
    env.reset(seed=3)
    rewards = [env.step(chat_tokenizer.decode(g, skip_special_tokens=True))[1] for g in kept]
    assert output.turn_rewards == pytest.approx(rewards)
    scores = output.as_dict()["rm_scores"]
    assert [float(scores[b - 1]) for _, b in spans] == pytest.approx(rewards)
    assert all(call["sampling_params"]["max_tokens"] <= 128 for call in server.calls)
    # the weight versions verl reads from every row: those the server gave the episode's calls
    assert (output.extra_fields["min_global_steps"], output.extra_fields["max_global_steps"]) == (3, 3 + len(server.calls))


@pytest.mark.parametrize("program, kind", [(crashes, "harness"), (hangs, "deadline")])
def test_a_program_that_crashes_or_hangs_gives_a_failed_episode(tmp_path, chat_tokenizer, program, kind):
    config = config_for(tmp_path, "tests:program", timeout=1.0)
    output, _ = play(config, chat_tokenizer, program)
    assert output.extra_fields["gem_stop"] == "failed"
    assert output.extra_fields["gem_failure"]["kind"] == kind
    assert not any(output.response_mask) and output.reward_score == 0.0 and output.turn_rewards == []
    assert output.response_logprobs == [0.0] and not output.as_dict()["rm_scores"].any()
    assert output.extra_fields["reward_extra_info"][f"failed_{kind}"] == 1.0


def test_the_gem_agent_section_is_checked(tmp_path):
    from gem_core.errors import GemError

    with pytest.raises(GemError, match="gem_agent.timeout"):
        write_run(RunSettings(env_ids=(EASY,), model="/models/tiny", out_dir=tmp_path, train_size=4, val_size=2,
                              batch_size=2, agent="tests:program", agent_timeout=-1))

"""The token-faithfulness suite (tests/tito/checks.py) on the GEM agent file under OpenRLHF's own
MultiTurnAgentExecutor and its conversion into an Experience (the harness of test_rollout.py,
its engine scripted), for every chat template the suite lists (tests/tito/templates.py)."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import pytest

from gem_adapters.openrlhf.labels import decode_label, encode_label
from tests.adapters.openrlhf.conftest import SamplingParams, ScriptedEngine
from tests.adapters.openrlhf.test_rollout import agent_file
from tests.tito import checks
from tests.tito.fixtures import echo_env, REWRITES, SEEDS, warns_afresh  # noqa: F401 - fixtures
from tests.tito.script import Script
from tests.tito.templates import full_render, template_params, with_template

MAX_LEN = 4096


@pytest.mark.parametrize("template", template_params())
def test_the_agent_trains_the_sampled_ids_in_their_context(tmp_path, smollm2_tokenizer, echo_env, template, caplog,
                                                           warns_afresh):
    from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator
    from openrlhf.trainer.ray.vllm_engine import _load_agent_executor

    tokenizer = with_template(smollm2_tokenizer, template)
    script = Script(tokenizer, template.end_of_turn, template.other_stop, template.mid_special)
    executor = _load_agent_executor(str(agent_file(tmp_path)))
    trained = []
    with caplog.at_level(logging.WARNING, logger="gem_adapters"):
        for seed in SEEDS:
            response = asyncio.run(executor.execute(
                prompt="(logged prompt)", label=encode_label(echo_env, seed), sampling_params=SamplingParams(),
                max_length=MAX_LEN, hf_tokenizer=tokenizer, llm_engine=ScriptedEngine(tokenizer, script=script)))
            experience = SamplesGenerator._process_response_into_experience(SimpleNamespace(), response,
                                                                           max_len=MAX_LEN)
            ids = experience.sequences[0].tolist()
            mask = [0] + experience.action_mask[0].tolist()  # action_mask is aligned with ids[1:]
            trained.append(checks.Trained(seed, ids, mask, decode_label(experience.labels[0])["turn_rewards"]))
    checks.assert_faithful(trained, script, render=None if template.rewrites else full_render(tokenizer))
    assert caplog.text.count(REWRITES) == int(template.rewrites)

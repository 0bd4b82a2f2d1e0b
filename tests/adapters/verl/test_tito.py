"""The token-faithfulness suite (tests/tito/checks.py) on the ``gem`` agent loop, instantiated the
way verl's agent-loop worker does (the harness of test_rollout.py, its server scripted), for every
chat template the suite lists (tests/tito/templates.py), with SmolLM2's model type (``llama``,
for which verl registers no token builder of its own) and Qwen3's."""

from __future__ import annotations

import asyncio
import logging

import pytest

from tests.adapters.verl.conftest import ScriptedServer, compose_config, make_agent_loop
from tests.tito import checks
from tests.tito.checks import runs
from tests.tito.fixtures import echo_env, REWRITES, SEEDS, warns_afresh  # noqa: F401 - fixtures
from tests.tito.script import Script
from tests.tito.templates import full_render, template_params, with_template
from tests.wrappers.conftest import smollm2_tokenizer, smollm2_tokenizer_dir  # noqa: F401 - fixtures


@pytest.mark.parametrize("model_type", ["llama", "qwen3"])
@pytest.mark.parametrize("template", template_params())
def test_the_agent_loop_trains_the_sampled_ids_in_their_context(written_run, smollm2_tokenizer, echo_env, template,
                                                                model_type, caplog, warns_afresh):
    tokenizer = with_template(smollm2_tokenizer, template)
    script = Script(tokenizer, template.end_of_turn, template.other_stop, template.mid_special)
    config = compose_config(written_run.config, ["data.max_response_length=4096"])

    async def play():
        loop = make_agent_loop(config, ScriptedServer(tokenizer, script=script), tokenizer, hf_model_type=model_type)
        return [await loop.run({"temperature": 1.0, "logprobs": False},
                               extra_info={"env_id": echo_env, "seed": seed, "index": 0}) for seed in SEEDS]

    with caplog.at_level(logging.WARNING, logger="gem_adapters"):
        outputs = asyncio.run(play())
    trained = []
    for seed, output in zip(SEEDS, outputs):
        assert output.extra_fields["gem_stop"] == "terminated"
        prompt = list(output.prompt_ids)
        mask = [0] * len(prompt) + list(output.response_mask)
        scores = output.as_dict()["rm_scores"].tolist()
        trained.append(checks.Trained(seed, prompt + list(output.response_ids), mask,
                                      [scores[end - 1 - len(prompt)] for _, end in runs(mask)]))
    checks.assert_faithful(trained, script, render=None if template.rewrites else full_render(tokenizer))
    assert caplog.text.count(REWRITES) == int(template.rewrites)

"""The token-faithfulness suite (tests/tito/checks.py) on the GEM environment file under RL2's own
rollout code (``Rollout.rollout``, one episode's turns, as ``Rollout.__call__`` gathers them;
the harness of test_rollout.py, its generation scripted), for every chat template the suite lists
(tests/tito/templates.py)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from gem_adapters.rl2.config import write_run
from tests.adapters.rl2.conftest import ScriptedModel
from tests.adapters.rl2.test_rollout import rl2_rollout, settings  # noqa: F401 - fixture
from tests.tito import checks, echo
from tests.tito.checks import runs
from tests.tito.fixtures import echo_env, REWRITES, SEEDS, warns_afresh  # noqa: F401 - fixtures
from tests.tito.script import Script
from tests.tito.templates import full_render, template_params, with_template


@pytest.mark.parametrize("template", template_params())
def test_the_environment_file_trains_the_sampled_ids_in_their_context(tmp_path, rl2_rollout, smollm2_tokenizer,
                                                                      echo_env, template, caplog, warns_afresh):
    tokenizer = with_template(smollm2_tokenizer, template)
    tokenizer.save_pretrained(tmp_path / "model")  # the environment file loads it as RL2's actor.model_name
    script = Script(tokenizer, template.end_of_turn, template.other_stop, template.mid_special)
    written = write_run(settings(tmp_path, tmp_path / "model"))
    rollout = rl2_rollout(written.file, ScriptedModel(tokenizer, script=script), max_turns=echo.TURNS)
    rollout.tokenizer = tokenizer

    async def play():
        return await asyncio.gather(*(rollout.rollout({"extra_info": {"env_id": echo_env, "seed": seed}}, True)
                                      for seed in SEEDS))

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)  # as on RL2's rank 0, whose Rollout.__call__ takes asyncio.get_event_loop()
    with caplog.at_level(logging.WARNING, logger="gem_adapters"):
        outputs = loop.run_until_complete(play())
    trained = []
    for seed, (tensor_dicts, _metrics) in zip(SEEDS, outputs):
        for tensors in tensor_dicts:  # RL2's sequences: states = ids[:-1], actions and masks = ids[1:]
            ids = tensors["states"].tolist() + tensors["actions"][-1:].tolist()
            mask = [0] + tensors["action_mask"].tolist()
            rewards = [0.0] + tensors["rewards"].tolist()
            trained.append(checks.Trained(seed, ids, mask, [rewards[end - 1] for _, end in runs(mask)]))
    checks.assert_faithful(trained, script, render=None if template.rewrites else full_render(tokenizer))
    assert len(trained) == len(SEEDS)  # RL2 kept every episode in one sequence
    assert caplog.text.count(REWRITES) == int(template.rewrites)

"""The token-faithfulness suite (tests/tito/checks.py) on the TRL adapter's rollout inside TRL's
trainer (``rollout_func``, its generation scripted), and on ``gem train``'s path, for every chat
template TRL's wheel ships that the suite lists (tests/tito/templates.py)."""

from __future__ import annotations

import logging

import pytest

from tests.adapters.trl.conftest import rows, scripted_generation, tiny_model_dir  # noqa: F401 - fixture
from tests.tito import checks, gem_train
from tests.tito.fixtures import echo_env, REWRITES, SEEDS, warns_afresh  # noqa: F401 - fixtures
from tests.tito.script import Script
from tests.tito.templates import full_render, template_params, with_template


@pytest.mark.parametrize("template", template_params())
def test_the_rollout_trains_the_sampled_ids_in_their_context(make_trainer, smollm2_tokenizer, echo_env, template,
                                                             caplog, warns_afresh):
    from gem_adapters.trl.rollout import EpisodeRollout, episode_starts

    train_rows = rows(echo_env, SEEDS)
    trainer = make_trainer(train_rows)
    tokenizer = with_template(smollm2_tokenizer, template)
    trainer._tokenizer = trainer.processing_class = tokenizer  # as if built with this tokenizer
    script = Script(tokenizer, template.end_of_turn, template.other_stop, template.mid_special)
    trainer._generate_single_turn = scripted_generation(tokenizer, script=script)
    trainer.gem_starts = episode_starts(train_rows)
    rollout = EpisodeRollout()
    with caplog.at_level(logging.WARNING, logger="gem_adapters"):
        out = rollout([row["prompt"] for row in train_rows], trainer)
        rollout([row["prompt"] for row in train_rows], trainer)  # warned once, not per batch

    trained = [checks.Trained(seed, prompt + completion, [0] * len(prompt) + mask, rewards)
               for seed, prompt, completion, mask, rewards in zip(
                   SEEDS, out["prompt_ids"], out["completion_ids"], out["env_mask"], out["gem_turn_rewards"])]
    script.calls = script.calls[:len(script.calls) // 2]  # the first batch's
    checks.assert_faithful(trained, script, render=None if template.rewrites else full_render(tokenizer))
    assert caplog.text.count(REWRITES) == int(template.rewrites)


@pytest.mark.parametrize("template", template_params())
def test_gem_train_trains_the_sampled_ids_in_their_context(tiny_model_dir, smollm2_tokenizer, echo_env, template):
    from transformers import AutoModelForCausalLM

    tokenizer = with_template(smollm2_tokenizer, template)
    script = Script(tokenizer, template.end_of_turn, template.other_stop, template.mid_special)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    trained, per_episode = gem_train.play(model, tokenizer, script, SEEDS)
    checks.assert_faithful(trained, script, render=full_render(tokenizer), every_prompt_rendered=True)
    gem_train.assert_new_sample_exactly_where_the_render_changes(script, per_episode)

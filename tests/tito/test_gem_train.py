"""The token-faithfulness suite on ``gem train``'s path (see tests/tito/checks.py), for every chat
template this stage has: SmolLM2's, and one written here that drops earlier answers' reasoning
(the trl stage runs TRL's templates too, in tests/adapters/trl/test_tito.py).

Each turn's prompt is the conversation rendered afresh (concat_chat), so every prompt is a full
render (check 5 on every prompt), and turns share a sample only where the new prompt extends the
last sample's tokens exactly."""

from __future__ import annotations

import pytest

from tests.tito import checks, gem_train
from tests.tito.fixtures import echo_env, SEEDS  # noqa: F401 - fixtures
from tests.tito.script import Script
from tests.tito.templates import template_params, with_template, full_render

pytest.importorskip("torch")
from tests.local.conftest import tiny, tiny_model_dir, tokenizer_dir  # noqa: E402,F401 - fixtures


@pytest.mark.parametrize("template", template_params())
def test_gem_train_trains_the_sampled_ids_in_their_context(tiny, echo_env, template):
    model, base = tiny
    tokenizer = with_template(base, template)
    script = Script(tokenizer, template.end_of_turn, template.other_stop, template.mid_special)
    trained, per_episode = gem_train.play(model, tokenizer, script, SEEDS)
    checks.assert_faithful(trained, script, render=full_render(tokenizer), every_prompt_rendered=True)
    gem_train.assert_new_sample_exactly_where_the_render_changes(script, per_episode)

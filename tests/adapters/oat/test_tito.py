"""The token-faithfulness suite (tests/tito/checks.py) on the GEM actor inside oat (the harness of
test_rollout.py, its vLLM engine scripted), with the default ``concat_chat`` wrapper: each turn is
a transition of its own, its prompt the conversation rendered afresh. Templates: SmolLM2's and the
suite's reasoning-dropping variant (oat's stage has no TRL, whose templates the trl stage runs on
the same rendering, through gem train's path)."""

from __future__ import annotations

import pytest

from tests.tito import checks
from tests.tito.fixtures import echo_env, SEEDS  # noqa: F401 - fixtures
from tests.tito.script import Script
from tests.tito.templates import full_render, template_params, with_template


@pytest.mark.parametrize("template", template_params())
def test_each_transition_is_a_sampled_answer_in_a_full_render(make_actor, smollm2_tokenizer, echo_env, template):
    tokenizer = with_template(smollm2_tokenizer, template)
    script = Script(tokenizer, template.end_of_turn, template.other_stop, template.mid_special)
    actor = make_actor("--env", echo_env, "--num_samples", "1", "--generate_max_length", "64",
                       tokenizer=tokenizer, script=script)
    actor.starts = [(echo_env, seed) for seed in SEEDS]
    episodes, _ = actor.collect_experience()
    trained = [checks.Trained(t.seed, list(t.prompt_ids) + list(t.response_ids),
                              [0] * len(t.prompt_ids) + [int(t.loss_mask)] * len(t.response_ids), [t.rewards])
               for episode in episodes for t in episode]
    checks.assert_faithful(trained, script, render=full_render(tokenizer), every_prompt_rendered=True)

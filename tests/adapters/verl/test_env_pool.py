"""verl's agent loop playing its episodes on a Ray pool of environment hosts (``gem.env_pool``),
on the session's simulated cluster: the same tokens and rewards as in-process, no environment
made in the rollout worker's process, and an episode whose host is lost goes on."""

from __future__ import annotations

import torch

from gem_adapters.common import session as session_module
from gem_adapters.common.options import EpisodeOptions
from tests.adapters.verl.conftest import compose_config
from tests.adapters.verl.test_rollout import HARD, binary_search, play, row
from tests.helpers import kill_ray_host

POOL = "verl-env-pool"


def test_the_agent_loop_plays_on_the_pool_and_survives_a_lost_host(ray_cluster, tmp_path, run_config,
                                                                     chat_tokenizer, monkeypatch):
    from gem_adapters.verl.config import RunSettings, write_run
    from gem_core.vector.ray_pool import shutdown_pool

    options = EpisodeOptions.from_config({"env_pool": {"hosts": 2, "name": POOL}})
    written = write_run(RunSettings(
        env_ids=(HARD,), model="/models/tiny", out_dir=tmp_path, train_size=4, val_size=2, batch_size=2,
        prompt_length=256, response_length=512, options=options))
    config = compose_config(written.config)
    assert dict(config.gem.env_pool) == {"hosts": 2, "name": POOL}

    in_process, _ = play(run_config, chat_tokenizer, binary_search, row(HARD, 5))

    def made_here(*args, **kwargs):
        raise AssertionError("an environment was made in the rollout worker's process")

    monkeypatch.setattr(session_module, "make", made_here)
    answers = 0

    def answer(prompt: str) -> str:
        nonlocal answers
        answers += 1
        if answers == 3:  # mid-episode: the host of the session's slot goes
            kill_ray_host(POOL, 0)
        return binary_search(prompt)

    try:
        pooled, _ = play(config, chat_tokenizer, answer, row(HARD, 5))
    finally:
        shutdown_pool(POOL, 2)
    assert answers >= 4
    assert pooled.prompt_ids == in_process.prompt_ids and pooled.response_ids == in_process.response_ids
    assert pooled.response_mask == in_process.response_mask
    assert torch.equal(pooled.as_dict()["rm_scores"], in_process.as_dict()["rm_scores"])
    assert pooled.extra_fields["gem_stop"] == "terminated"

"""``gem train``'s path, for the suite: the local trainer's policy (LocalPolicy, its sampling
scripted) playing the echo environment in a vector environment with the ``concat_chat`` wrapper,
and the episodes turned into training samples by ``training_samples``, as ``gem train``'s step
does (gem_trainer.training.trainer)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gem_core
from tests.tito import echo
from tests.tito.checks import Trained, runs
from tests.tito.script import Script


def play(model: Any, tokenizer: Any, script: Script,
         seeds: Sequence[int]) -> tuple[list[Trained], dict[int, list[Any]]]:
    """Play one episode per seed; returns the trained sequences (each turn's advantage given as
    its reward, so that check 7 follows them) and the samples of each episode."""
    from gem_trainer.training.rollout import training_samples
    from tests.local.test_rollout import ScriptedPolicy

    policy = ScriptedPolicy(model, tokenizer, script=script, max_prompt_tokens=8192)
    with gem_core.make_vec(echo.ENV_ID, num_envs=len(seeds), wrappers="concat_chat",
                           wrapper_options={"tokenizer": tokenizer}) as vec:
        episodes = gem_core.collect_episodes(vec, policy, len(seeds), seed=list(seeds))
    trained, per_episode = [], {}
    for episode in episodes:
        advantages = [echo.reward(turn) for turn in range(1, episode.num_turns + 1)]
        samples, _, skipped = training_samples([episode], [advantages], policy)
        assert skipped == 0
        per_episode[episode.seed] = samples
        for sample in samples:
            ids = sample.prompt_ids + sample.completion_ids
            mask = [0] * len(sample.prompt_ids) + sample.mask
            values = [sample.advantages[start - len(sample.prompt_ids)] for start, _ in runs(mask)]
            trained.append(Trained(episode.seed, ids, mask, values))
    return trained, per_episode


def assert_new_sample_exactly_where_the_render_changes(script: Script, per_episode: dict[int, list[Any]]) -> None:
    """Consecutive turns share a sample exactly when the later prompt extends the earlier prompt
    and answer (check 5 for gem train: a history-rewriting template starts a new sample)."""
    by_seed = {}
    for call in script.calls:
        by_seed.setdefault(call.seed, {})[call.turn] = call
    for seed, calls in by_seed.items():
        samples = per_episode[seed]
        breaks = sum(calls[t + 1].prompt[:len(calls[t].prompt) + len(calls[t].output)]
                     != calls[t].prompt + calls[t].output for t in range(len(calls) - 1))
        assert len(samples) == 1 + breaks, (seed, len(samples), breaks)

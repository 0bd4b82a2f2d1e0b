"""Conformance episodes as oat transitions, and one learner rank of a two-process run (spawned by
test_advantages.py; a module of its own so that the spawned processes can import it)."""

from __future__ import annotations

from tests.adapters import conformance

EASY = "game:GuessTheNumber-v0-easy"


def starts_of(group_ids):
    """One episode start per distinct group id, in order: episodes of one group share their start."""
    seeds: dict = {}
    return [(EASY, seeds.setdefault(group, len(seeds))) for group in group_ids]


#: Turns in the conformance batch: oat keeps at most ``--rollout_batch_size_per_device`` of them.
TURNS = sum(len(episode) for episode in conformance.EPISODES)


def episodes_of(rewards_per_episode, starts=None, layout=conformance.LAYOUT):  # needs the stand-ins installed
    """Transitions in the conformance layout: turn ``t`` of an episode answers with that turn's
    model tokens; its prompt is the episode so far (token 7 for the first observation, 8 for each
    later one). Without ``starts`` every episode has a start of its own."""
    from gem_adapters.oat.rollout import GemTransition

    if starts is None:
        starts = starts_of(range(len(rewards_per_episode)))
    episodes = []
    for rewards, turns, (env_id, seed) in zip(rewards_per_episode, layout, starts):
        prompt, episode = [7], []
        for k, (reward, (model_tokens, env_tokens)) in enumerate(zip(rewards, turns)):
            response = [100 + k] * model_tokens
            episode.append(GemTransition(
                obs=f"turn {k}", action=f"answer {k}", rewards=reward, done=k == len(rewards) - 1,
                prompt="", prompt_ids=list(prompt), response="", response_ids=response,
                response_logprobs=[-0.5] * model_tokens, response_is_truncated=False, action_is_formatted=True,
                info={"actor/episode": float(len(episodes)), "actor/turn": float(k)}, env_id=env_id, seed=seed))
            prompt += response + [8] * max(env_tokens, 1)
        episodes.append(episode)
    return episodes


def learner_rank(rank: int, world_size: int, folder: str) -> None:
    """Each rank holds its share of the conformance episodes, the earlier ranks the earlier ones;
    each saves the advantages its learner gives them."""
    import numpy as np
    import torch.distributed as dist

    import tests.adapters.oat.conftest  # noqa: F401 - installs the stand-ins
    from gem_adapters.oat.advantages import GemOatLearner
    from gem_adapters.oat.train import parse

    dist.init_process_group("gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=world_size)
    try:
        args = parse(["--pretrain", "SmolLM2", "--env", EASY, "--estimator", "rebn",
                      "--rollout_batch_size_per_device", str(TURNS)])
        learner = GemOatLearner(world_size, rank, 0, "127.0.0.1", 29500, False, args, [], None)
        learner.critic, learner.pi_buffer, learner.all_buffer, learner.query_step = None, [], [], 0
        mine = np.array_split(np.arange(len(conformance.EPISODES)), world_size)[rank]
        episodes = episodes_of([conformance.EPISODES[i] for i in mine], [(EASY, int(i)) for i in mine],
                               [conformance.LAYOUT[i] for i in mine])
        learner.process_feedback_data(episodes)
        np.save(f"{folder}/rank{rank}.npy", np.array([t.info["advantages"] for t in learner.pi_buffer]))
    finally:
        dist.destroy_process_group()

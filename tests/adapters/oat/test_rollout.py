"""The GEM actor inside oat: real GEM episodes as oat transitions, through oat's own actor step and
shared-memory transport."""

from __future__ import annotations

import pytest

from tests.adapters import failing
from tests.adapters.oat.conftest import EASY
from tests.adapters.scripted import bisection

HARD = "game:GuessTheNumber-v0-hard"

import gem_core


def replayed_rewards(env_id: str, seed: int, actions: list[str]) -> tuple[list[float], bool]:
    """The rewards the environment gives those actions from that seed, and whether it ended."""
    env = gem_core.make(env_id)
    try:
        env.reset(seed=seed)
        rewards, ended = [], False
        for action in actions:
            _, reward, terminated, truncated, _ = env.step(action)
            rewards.append(float(reward))
            ended = terminated or truncated
        return rewards, ended
    finally:
        env.close()


def play(actor, starts):
    actor.starts = list(starts)
    return actor.collect_experience()


def test_each_start_is_played_num_samples_times_as_real_episodes(make_actor, smollm2_tokenizer):
    actor = make_actor("--env", EASY, "--num_samples", "2")
    episodes, metrics = play(actor, [(EASY, 3), (EASY, 4)])

    assert [(e[0].env_id, e[0].seed) for e in episodes] == [(EASY, 3), (EASY, 3), (EASY, 4), (EASY, 4)]
    assert metrics["actor/gem_episodes"] == 4 and metrics["actor/gem_env_faults"] == 0
    # what oat logs of the episodes, counted as `gem train` counts them: bisection wins every one
    assert metrics["actor/gem_success_rate"] == 1.0 and metrics["actor/gem_format_error_rate"] == 0.0
    assert metrics["actor/gem_turns_per_episode"] == sum(map(len, episodes)) / 4
    assert metrics["actor/gem_mean_return"] == pytest.approx(sum(t.rewards for e in episodes for t in e) / 4)
    for episode in episodes:
        rewards, ended = replayed_rewards(EASY, episode[0].seed, [t.action for t in episode])
        assert [t.rewards for t in episode] == rewards and ended  # bisection plays until it wins
        assert [t.done for t in episode] == [False] * (len(episode) - 1) + [True]
        assert len(episode) >= 2 and episode[-1].rewards > 0


def test_transitions_carry_the_tokens_log_probs_and_masks_oat_trains_on(make_actor, smollm2_tokenizer):
    actor = make_actor("--env", EASY, "--num_samples", "1")
    (episode,), _ = play(actor, [(EASY, 5)])
    end = smollm2_tokenizer.convert_tokens_to_ids("<|im_end|>")
    for k, transition in enumerate(episode):
        # concat_chat renders the episode so far with the model's chat template: the prompt is the observation
        assert transition.prompt == transition.obs and transition.prompt.endswith("<|im_start|>assistant\n")
        assert transition.prompt_ids == smollm2_tokenizer(transition.prompt, add_special_tokens=False)["input_ids"]
        assert transition.prompt.count("<|im_start|>assistant\n") == k + 1  # earlier answers are in it
        assert transition.response_ids[-1] == end
        assert smollm2_tokenizer.decode(transition.response_ids, skip_special_tokens=True) == transition.response
        assert transition.action == transition.response  # what the environment was stepped with
        assert transition.response_logprobs == [-(i + 1) / 100 for i in range(len(transition.response_ids))]
        assert transition.loss_mask and not transition.response_is_truncated and transition.action_is_formatted
    assert smollm2_tokenizer.decode(episode[1].prompt_ids).startswith(
        smollm2_tokenizer.decode(episode[0].prompt_ids + episode[0].response_ids))


def test_generation_is_one_batch_across_the_running_episodes(make_actor):
    actor = make_actor("--env", EASY, "--num_samples", "3")
    episodes, _ = play(actor, [(EASY, 1), (EASY, 2)])
    assert len(actor.llm.calls[0]) == 6  # every episode's first turn in one call
    assert len(actor.llm.calls) == max(len(episode) for episode in episodes)
    assert sum(map(len, actor.llm.calls)) == sum(map(len, episodes))


def test_without_a_chat_wrapper_the_observation_goes_through_the_chat_template(make_actor, smollm2_tokenizer):
    actor = make_actor("--env", EASY, "--num_samples", "1", "--wrappers", "", "--max_turns", "1")
    (episode,), _ = play(actor, [(EASY, 0)])
    (transition,) = episode
    assert transition.prompt == smollm2_tokenizer.apply_chat_template(
        [{"role": "user", "content": transition.obs}], tokenize=False, add_generation_prompt=True)
    assert transition.done


def test_a_response_cut_by_the_token_cap_is_marked_truncated(make_actor):
    actor = make_actor("--env", EASY, "--num_samples", "1", "--generate_max_length", "3", "--ignore_no_eos")
    (episode,), _ = play(actor, [(EASY, 0)])
    assert episode[-1].done
    for transition in episode:
        assert len(transition.response_ids) == 3 and transition.response_is_truncated
        assert not transition.action_is_formatted and not transition.loss_mask  # --ignore_no_eos


def test_an_episode_ends_at_the_turn_whose_prompt_leaves_no_room(make_actor, smollm2_tokenizer):
    first = len(smollm2_tokenizer(gem_core.wrappers.observation.concat_chat(
        gem_core.make(EASY), tokenizer=smollm2_tokenizer).reset(seed=0)[0], add_special_tokens=False)["input_ids"])
    actor = make_actor("--env", EASY, "--num_samples", "1", "--max_model_len", str(first + 20))
    (episode,), metrics = play(actor, [(EASY, 0)])
    assert len(episode) == 1 and episode[0].done  # the second prompt holds the first answer and feedback
    assert len(episode[0].response_ids) <= 20
    assert metrics["actor/gem_episodes_cut_at_max_model_len"] == 1
    assert len(actor.llm.calls) == 1  # nothing was generated for the prompt without room


def test_an_environment_that_raises_mid_episode_fails_it_and_the_batch_goes_on(make_actor):
    with failing.registered() as broken:
        actor = make_actor("--env", EASY, "--num_samples", "1")
        episodes, metrics = play(actor, [(broken, 0), (EASY, 1)])
    broken_episode, easy_episode = episodes
    assert [t.rewards for t in broken_episode] == [failing.FIRST_REWARD, 0.0]
    assert [t.done for t in broken_episode] == [False, True]
    assert [(t.failure, t.loss_mask) for t in broken_episode] == [("error", False)] * 2  # oat trains none of it
    assert easy_episode[-1].rewards > 0 and easy_episode[-1].done
    assert all(t.failure == "" and t.loss_mask for t in easy_episode)
    assert metrics["actor/gem_env_faults"] == 1
    assert metrics["actor/gem_failed_rate"] == 0.5 and metrics["actor/gem_failed_error"] == 0.5
    assert metrics["actor/gem_failed_deadline"] == 0.0
    assert metrics["actor/gem_mean_return"] == pytest.approx(sum(t.rewards for t in easy_episode))  # valid only


def test_an_episode_past_its_deadline_fails(make_actor):
    import inspect
    import time

    from gem_core import collect_episodes

    if "episode_deadline" not in inspect.signature(collect_episodes).parameters:
        pytest.skip("collect_episodes takes no episode_deadline in this gem_core")
    calls = []

    def slow(prompt):
        calls.append(prompt)
        if len(calls) == 2:
            time.sleep(1.0)
        return bisection(prompt)

    actor = make_actor("--env", HARD, "--num_samples", "1", "--episode_deadline", "0.5", answer=slow)
    episodes, metrics = play(actor, [(HARD, 0)])
    assert episodes[0][0].failure == "deadline" and not any(t.loss_mask for t in episodes[0])
    assert metrics["actor/gem_failed_deadline"] == 1.0


def test_oats_actor_step_sends_the_episodes_through_its_shared_memory(make_actor, plasma_server):
    """The learner's rows reach the actor as prompts and references; oat's own ``step`` logs the
    episodes and serialises them into the plasma store, where the learner's collector reads them."""
    import torch
    from oat.algorithms.ppo_multiturn import MultiTurnFeedbackCollector
    from oat.utils.ipc import PlasmaShmClient
    from torch.utils.data import DataLoader

    from gem_adapters.oat.advantages import StartRows

    actor = make_actor("--env", EASY, "--num_samples", "2")
    actor.ipc_client = PlasmaShmClient(plasma_server)
    env_ids, formatted, seeds = next(iter(DataLoader(StartRows([(EASY, 7), (EASY, 8)]), batch_size=2)))
    assert isinstance(seeds, torch.Tensor)  # what oat's dataloader hands over
    handle = actor.step(env_ids, formatted, seeds)

    episodes = PlasmaShmClient(plasma_server).deserialize_ipc(handle)
    assert [(e[0].env_id, e[0].seed) for e in episodes] == [(EASY, 7), (EASY, 7), (EASY, 8), (EASY, 8)]
    info = episodes[0][0].info
    assert info["actor/mean_episode_success"] == 1.0 and info["actor/gem_episodes"] == 4
    metrics = MultiTurnFeedbackCollector.get_metrics(None, 0.0, episodes)
    assert metrics["actor/num_transitions"] == sum(map(len, episodes))


def test_an_unknown_wrapper_is_refused_before_any_episode(make_actor):
    with pytest.raises(gem_core.GemError, match="concat_chatt"):
        make_actor("--env", EASY, "--wrappers", "concat_chatt")

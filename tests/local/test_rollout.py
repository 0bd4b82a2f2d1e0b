"""From episodes to training samples: seeds, groups, and joining the turns of an episode."""

from __future__ import annotations

import pytest

import gem_core
from gem_trainer.decoding.sampling import LocalPolicy, SamplingSettings
from gem_trainer.training.rollout import group_ids, seat_advantages, slot_env_ids, step_seeds, training_samples


def test_slots_deal_env_ids_to_groups_and_groups_share_seeds():
    assert slot_env_ids(["a", "b"], 6, 2) == ["a", "a", "b", "b", "a", "a"]
    seeds = step_seeds(7, 3, 6, 2)
    assert seeds[0] == seeds[1] and seeds[2] == seeds[3] and len({seeds[0], seeds[2], seeds[4]}) == 3
    assert step_seeds(7, 3, 6, 2) == seeds  # reproducible
    assert step_seeds(7, 4, 6, 2) != seeds and step_seeds(8, 3, 6, 2) != seeds


def test_group_ids_follow_env_and_seed():
    from gem_core.episodes import Episode

    episodes = [Episode("a", 1), Episode("a", 1), Episode("b", 1), Episode("a", 2)]
    assert group_ids(episodes) == [0, 0, 1, 2]


def test_a_group_split_by_carry_over_or_a_deadline_is_left_out_not_refused():
    from gem_core.episodes import Episode, Turn

    def episode(seed, reward):
        played = Episode("a", seed)
        played.turns.append(Turn("o", "x", reward, True, False, {}))
        return played

    # seed 2's and seed 3's other members carried over to the next step, or the step's deadline cut them
    episodes = [episode(1, 1.0), episode(1, 0.0), episode(2, 1.0), episode(3, 0.0)]
    advantages = seat_advantages(episodes, "grpo", gamma=1.0, group_size=2)
    assert [float(a[0]) for _, a in advantages[0] + advantages[1]] == pytest.approx([1.0, -1.0], abs=1e-3)
    assert [float(a[0]) for _, a in advantages[2] + advantages[3]] == [0.0, 0.0]
    rebn = seat_advantages(episodes, "rebn", gamma=1.0, group_size=2)  # no groups compared: all kept
    assert all(float(a[0]) != 0.0 for seats in rebn for _, a in seats)


class ScriptedPolicy(LocalPolicy):
    """Answers prompts through the real bookkeeping of LocalPolicy: every prompt with the same text
    (closed with the end-of-sequence token), or with what ``script`` returns for its token ids."""

    def __init__(self, model, tokenizer, answer: str = "", *, script=None, max_prompt_tokens: int = 1024):
        super().__init__(model, tokenizer, SamplingSettings(max_new_tokens=16, max_prompt_tokens=max_prompt_tokens))
        self.answer = tokenizer.encode(answer, add_special_tokens=False) + [tokenizer.eos_token_id]
        self.script = script

    def generate_stream(self, prompts, vision=None, *, seeds=None):
        yield list(range(len(prompts))), [self.script(p) if self.script else list(self.answer) for p in prompts]


def test_turns_of_an_episode_join_into_one_sample_with_the_real_chat_template(tiny):
    from tests.local.envs import ENV_ID, register_once

    register_once()
    model, tokenizer = tiny
    policy = ScriptedPolicy(model, tokenizer, "Only letters here")
    with gem_core.make_vec(ENV_ID, num_envs=2, wrappers="concat_chat", wrapper_options={"tokenizer": tokenizer}) as vec:
        episodes = gem_core.collect_episodes(vec, policy, 2, seed=[5, 6])
    assert [e.num_turns for e in episodes] == [2, 2]
    advantages = [[0.1, 0.2], [-0.1, -0.2]]
    samples, trained, skipped = training_samples(episodes, advantages, policy)
    assert (len(samples), trained, skipped) == (2, 4, 0)
    answer = policy.answer
    for sample, episode, episode_advantages in zip(samples, episodes, advantages):
        # the joined sample is exactly the last prompt followed by the last answer
        last_prompt = tokenizer.encode(episode.turns[-1].observation, add_special_tokens=False)
        assert sample.prompt_ids + sample.completion_ids == last_prompt + answer
        assert sample.num_model_tokens == 2 * len(answer)
        trained_advantages = [a for a, m in zip(sample.advantages, sample.mask) if m]
        assert trained_advantages == [a for a in episode_advantages for _ in answer]
    assert policy.take_sampled(episodes[0].turns[0].observation, episodes[0].turns[0].action) is None  # handed out once


def test_an_episode_is_one_sample_when_each_prompt_extends_the_last(tiny):
    # concat_chat shows every observation as it was seen (a game's reminder included), so each
    # turn's prompt starts with the previous prompt and answer: an episode's turns share a sample
    model, tokenizer = tiny
    policy = ScriptedPolicy(model, tokenizer, "I guess \\boxed{11}")  # out of range: the game goes on
    with gem_core.make_vec("game:GuessTheNumber-v0-easy", num_envs=2, wrappers="concat_chat",
                           wrapper_options={"tokenizer": tokenizer}) as vec:
        episodes = gem_core.collect_episodes(vec, policy, 2, seed=[5, 6])
    assert [e.num_turns for e in episodes] == [4, 4]  # every guess invalid: truncated after 4
    samples, trained, _ = training_samples(episodes, [[1.0] * 4, [-1.0] * 4], policy)
    assert len(samples) == 2 and trained == 8
    assert samples[0].prompt_ids == tokenizer.encode(episodes[0].turns[0].observation, add_special_tokens=False)
    assert samples[0].num_model_tokens == 4 * len(policy.answer)  # the four answers, environment tokens masked

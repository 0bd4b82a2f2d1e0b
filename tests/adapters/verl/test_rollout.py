"""The ``gem`` agent loop, instantiated the way verl's agent-loop worker does and driven by a
scripted model server (token ids in and out): prompt and response ids, masks, per-turn reward
positions, budgets and stops, for several games."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
import torch

import gem_core
from gem_core.wrappers.observation import as_seen  # observations as adapters show them
from gem_adapters.common.session import failure_metrics
from tests.adapters import failing
from gem_core import Env, GemError
from tests.adapters.verl.conftest import ScriptedServer, compose_config, make_agent_loop

EASY, HARD = "game:GuessTheNumber-v0-easy", "game:GuessTheNumber-v0-hard"


class Countdown(Env):
    """Every answer earns ``0.1 * turn``; the episode ends after ``length`` turns."""

    def __init__(self, length: int = 3):
        self.length = length

    def reset(self, seed=None, **options):
        super().reset(seed)
        self.turn = 0
        return f"Count down from {self.length}.", {}

    def step(self, action):
        self.turn += 1
        done = self.turn >= self.length
        return f"{self.length - self.turn} left.", round(0.1 * self.turn, 3), done, False, {}

    def sample_random_action(self):
        return "next"


gem_core.register("testpack:Countdown-v0", Countdown)


def binary_search(prompt: str) -> str:
    """A policy that reads the whole conversation and bisects the range it was told."""
    low, high = (int(x) for x in re.search(r"integer from (\d+) to (\d+)", prompt).groups())
    for guess, direction in re.findall(r"you guessed (\d+); the number is (higher|lower)", prompt):
        if direction == "higher":
            low = max(low, int(guess) + 1)
        else:
            high = min(high, int(guess) - 1)
    return f"Bisecting: \\boxed{{{(low + high) // 2}}}"


def replay(env_id: str, seed: int, actions: list[str]) -> tuple[list[str], list[float]]:
    """Observations after each action and the rewards, from a fresh environment."""
    env = gem_core.make(env_id)
    observations = [as_seen(*env.reset(seed=seed))]
    rewards = []
    for action in actions:
        observation, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        observations.append(as_seen(observation, info, done=terminated or truncated))
        if terminated or truncated:
            break
    return observations, rewards


def row(env_id: str, seed: int) -> dict[str, Any]:
    return {"extra_info": {"env_id": env_id, "seed": seed, "index": 0}, "raw_prompt": [], "index": 0}


def play(config, tokenizer, answer, kwargs, *, hf_model_type=None, logprobs=False, processor=None):
    server = ScriptedServer(tokenizer, answer, logprobs=logprobs)

    async def go():
        loop = make_agent_loop(config, server, tokenizer, hf_model_type=hf_model_type, processor=processor)
        return await loop.run({"temperature": 1.0, "top_p": 1.0, "logprobs": logprobs}, **kwargs)

    return asyncio.run(go()), server


def actions_of(server: ScriptedServer, tokenizer) -> list[str]:
    return [tokenizer.decode(ids, skip_special_tokens=True) for ids in server.generated]


def runs(mask: list[int]) -> list[tuple[int, int]]:
    """(start, end) of every run of 1s, end exclusive."""
    spans, start = [], None
    for i, bit in enumerate([*mask, 0]):
        if bit and start is None:
            start = i
        if not bit and start is not None:
            spans.append((start, i))
            start = None
    return spans


def test_plays_rows_of_the_written_dataset(written_run, run_config, chat_tokenizer):
    from verl.utils.dataset.rl_dataset import RLHFDataset

    dataset = RLHFDataset(data_files=[str(written_run.train)], tokenizer=chat_tokenizer, config=run_config.data)
    for item in (dataset[0], dataset[1]):  # an easy and a hard game
        env_id, seed = item["extra_info"]["env_id"], item["extra_info"]["seed"]
        output, server = play(run_config, chat_tokenizer, binary_search, item)
        actions = actions_of(server, chat_tokenizer)
        observations, rewards = replay(env_id, seed, actions)
        assert rewards[-1] == 1.0 and len(rewards) == len(actions) >= 2  # bisection finds it

        # The prompt is the first observation through the chat template, as in the dataset row.
        assert item["raw_prompt"] == [{"role": "user", "content": observations[0]}]
        expected_prompt = chat_tokenizer.apply_chat_template(
            item["raw_prompt"], add_generation_prompt=True, tokenize=True, return_dict=False)
        assert output.prompt_ids == list(expected_prompt)

        # Model tokens carry mask 1, one run per turn; everything between is the next observation.
        spans = runs(output.response_mask)
        assert [output.response_ids[a:b] for a, b in spans] == server.generated
        for (_, end), (start, _), observation in zip(spans, spans[1:], observations[1:]):
            inserted = chat_tokenizer.decode(output.response_ids[end:start], skip_special_tokens=False)
            # the newline the template puts after <|im_end|>, whatever the model type
            assert inserted == f"\n<|im_start|>user\n{observation}<|im_end|>\n<|im_start|>assistant\n"

        # Token ids in: each call saw exactly the tokens so far.
        everything = output.prompt_ids + output.response_ids
        for call, (start, _) in zip(server.calls, spans):
            assert call["prompt_ids"] == everything[:len(output.prompt_ids) + start]
        assert len({call["request_id"] for call in server.calls}) == 1

        # Each turn's reward sits on its last model token.
        scores = output.as_dict()["rm_scores"]
        expected = torch.zeros(len(output.response_ids))
        expected[[end - 1 for _, end in spans]] = torch.tensor(rewards)
        assert torch.equal(scores, expected)
        assert output.reward_score == sum(rewards)
        assert output.extra_fields["turn_scores"] == rewards
        assert output.extra_fields["gem_stop"] == "terminated"
        assert output.num_turns == 2 * len(rewards)  # the first observation, then answer, observation, ...


def test_per_turn_rewards_land_on_each_turn(run_config, chat_tokenizer):
    output, server = play(run_config, chat_tokenizer, lambda prompt: "next one",
                          row("testpack:Countdown-v0", 0))
    data = output.as_dict()
    spans = runs(data["response_mask"].tolist())
    assert len(spans) == 3
    assert data["rm_scores"][[end - 1 for _, end in spans]].tolist() == pytest.approx([0.1, 0.2, 0.3])
    assert float(data["rm_scores"].sum()) == pytest.approx(0.6)
    assert "turn_rewards" not in data  # verl gets rm_scores, not our bookkeeping


def test_qwen_builder_reproduces_the_chat_template_exactly(run_config, chat_tokenizer):
    output, server = play(run_config, chat_tokenizer, binary_search, row(HARD, 5), hf_model_type="qwen3")
    actions = actions_of(server, chat_tokenizer)
    observations, rewards = replay(HARD, 5, actions)
    conversation = [{"role": "user", "content": observations[0]}]
    for action, observation in zip(actions, observations[1:-1]):
        conversation += [{"role": "assistant", "content": action}, {"role": "user", "content": observation}]
    conversation.append({"role": "assistant", "content": actions[-1]})
    rendered = list(chat_tokenizer.apply_chat_template(conversation, tokenize=True, return_dict=False))
    newline = chat_tokenizer.encode("\n", add_special_tokens=False)
    assert rendered[-len(newline):] == newline  # the template ends a turn with <|im_end|>\n
    assert output.prompt_ids + output.response_ids == rendered[:-len(newline)]
    # The newline verl inserts after each <|im_end|> is not the model's: mask 0.
    spans = runs(output.response_mask)
    assert [output.response_ids[a:b] for a, b in spans] == server.generated
    assert output.as_dict()["rm_scores"][spans[-1][1] - 1] == 1.0


def test_running_out_of_guesses_truncates_with_the_closeness_reward(run_config, chat_tokenizer):
    env = gem_core.make(EASY)
    env.reset(seed=3)
    wrong = 10 if env.unwrapped.target != 10 else 9
    output, _ = play(run_config, chat_tokenizer, lambda prompt: f"\\boxed{{{wrong}}}", row(EASY, 3))
    rewards = output.extra_fields["turn_scores"]
    assert output.extra_fields["gem_stop"] == "truncated"
    assert len(rewards) == 4  # the easy game's turn limit
    assert rewards[:3] == [0.0, 0.0, 0.0]  # the repeats after the first guess are invalid, not rewarded
    assert rewards[-1] == pytest.approx(1 - abs(wrong - env.unwrapped.target) / 9)
    scores = output.as_dict()["rm_scores"]
    assert scores[runs(output.response_mask)[-1][1] - 1] == pytest.approx(rewards[-1])


def test_a_format_error_ends_the_episode_with_its_penalty(run_config, chat_tokenizer):
    answers = iter(["\\boxed{1}", "I would rather not say."])
    output, _ = play(run_config, chat_tokenizer, lambda prompt: next(answers), row(HARD, 11))
    assert output.extra_fields["turn_scores"] == [0.0, -0.1]
    assert output.extra_fields["gem_stop"] == "terminated"
    scores = output.as_dict()["rm_scores"]
    assert scores[runs(output.response_mask)[-1][1] - 1] == pytest.approx(-0.1)
    assert float(scores.sum()) == pytest.approx(-0.1)


def test_gem_max_turns_stops_the_episode(written_run, chat_tokenizer):
    config = compose_config(written_run.config, ["gem.max_turns=2"])
    output, server = play(config, chat_tokenizer, lambda prompt: "\\boxed{1}", row(HARD, 2))
    assert len(server.calls) == 2
    assert output.extra_fields["gem_stop"] == "max_turns"
    assert len(runs(output.response_mask)) == 2
    assert output.response_mask[-1] == 1  # no observation after the last turn


def test_the_response_budget_is_never_exceeded(written_run, chat_tokenizer):
    # Measure the turns once, then give a budget that the observation after turn 2 fills exactly.
    unlimited, measured = play(run_config_with(written_run, 512), chat_tokenizer, repeat_one, row(HARD, 2))
    budget = len(measured.calls[2]["prompt_ids"]) - len(unlimited.prompt_ids)
    config = run_config_with(written_run, budget)
    assert config.actor_rollout_ref.rollout.response_length == budget
    output, server = play(config, chat_tokenizer, repeat_one, row(HARD, 2))
    assert output.extra_fields["gem_stop"] == "response_length"  # the next observation did not fit
    assert len(server.calls) == 2
    assert len(output.response_ids) == len(output.response_mask) <= budget
    for call in server.calls:  # each turn may use what is left, and no more
        used = len(call["prompt_ids"]) - len(output.prompt_ids)
        assert call["sampling_params"]["max_tokens"] == budget - used


def test_a_generation_cut_by_the_budget_is_still_played(written_run, chat_tokenizer):
    unlimited, measured = play(run_config_with(written_run, 512), chat_tokenizer, repeat_one, row(HARD, 2))
    budget = len(measured.calls[2]["prompt_ids"]) - len(unlimited.prompt_ids) + 2  # two tokens for turn 3
    output, server = play(run_config_with(written_run, budget), chat_tokenizer, repeat_one, row(HARD, 2))
    assert [len(ids) for ids in server.generated][-1] == 2
    assert len(output.response_ids) == budget
    assert output.extra_fields["turn_scores"][-1] == -0.1  # the cut answer lost its \boxed{}: a format error


def run_config_with(written_run, response_length: int):
    return compose_config(written_run.config, [f"data.max_response_length={response_length}"])


def repeat_one(prompt: str) -> str:
    return "\\boxed{1}"


def test_max_tokens_per_turn_caps_each_generation(written_run, chat_tokenizer):
    config = compose_config(written_run.config, ["gem.max_tokens_per_turn=5"])
    output, server = play(config, chat_tokenizer, lambda prompt: "Let me think hard about it. \\boxed{1}",
                          row(HARD, 2))
    assert all(call["sampling_params"]["max_tokens"] == 5 for call in server.calls)
    assert all(len(ids) == 5 for ids in server.generated)
    assert output.extra_fields["turn_scores"] == [-0.1]  # the answer was cut before its \boxed{}
    # what verl gets for its loggers: a lost episode that ended on a format error
    assert output.extra_fields["reward_extra_info"] == {"turns": 1.0, "terminated": 1.0, "success": 0.0,
                                                        "format_error": 1.0, **failure_metrics(None)}


def test_logprobs_follow_the_model_tokens(run_config, chat_tokenizer):
    output, server = play(run_config, chat_tokenizer, binary_search, row(EASY, 1), logprobs=True)
    assert len(output.response_logprobs) == len(output.response_ids)
    spans = runs(output.response_mask)
    for (start, end), ids in zip(spans, server.generated):
        assert output.response_logprobs[start:end] == pytest.approx([-0.25 - 0.01 * i for i in range(len(ids))])
    outside = [lp for lp, bit in zip(output.response_logprobs, output.response_mask) if not bit]
    assert set(outside) <= {0.0}


def test_server_fields_and_metrics_are_kept(run_config, chat_tokenizer):
    output, server = play(run_config, chat_tokenizer, binary_search, row(EASY, 4))
    assert output.extra_fields["min_global_steps"] == 3
    assert output.extra_fields["max_global_steps"] == 3 + len(server.calls)
    assert output.metrics.num_preempted == 0
    assert output.metrics.generate_sequences >= 0.0
    info = output.extra_fields["reward_extra_info"]  # the episode for verl's loggers: binary search wins
    assert info == {"turns": float(len(server.calls)), "terminated": 1.0, "success": 1.0, "format_error": 0.0,
                    **failure_metrics(None)}


def test_wrappers_from_the_config_are_applied(written_run, chat_tokenizer, monkeypatch):
    from gem_core.registry import WRAPPERS

    class Tagged(gem_core.Wrapper):
        def reset(self, seed=None, **options):
            observation, info = self.env.reset(seed, **options)
            return "[game] " + observation, info

        def step(self, action):
            observation, *rest = self.env.step(action)
            return "[game] " + observation, *rest

    WRAPPERS.register("test_tagged", Tagged)
    try:
        config = compose_config(written_run.config, ["gem.wrappers=test_tagged"])
        output, server = play(config, chat_tokenizer, lambda prompt: "\\boxed{1}", row(HARD, 0))
        text = chat_tokenizer.decode(output.prompt_ids + output.response_ids)
        assert text.count("[game] ") == len(server.calls)  # the first observation and each one shown after
        assert text.startswith("<|im_start|>user\n[game] Let's play")
    finally:
        WRAPPERS.remove("test_tagged")


def gem_error(call, match: str) -> GemError:
    """The GemError ``call`` raised, also when verl's Hydra instantiation wrapped it."""
    with pytest.raises(Exception) as caught:
        call()
    error = caught.value if isinstance(caught.value, GemError) else caught.value.__cause__
    assert isinstance(error, GemError), caught.value
    assert re.search(match, str(error)), str(error)
    return error


def test_rows_without_an_environment_are_refused(run_config, chat_tokenizer):
    gem_error(lambda: play(run_config, chat_tokenizer, binary_search, {"extra_info": {"index": 0}}),
              "extra_info.env_id")


def test_unknown_environment_ids_name_the_closest(run_config, chat_tokenizer):
    gem_error(lambda: play(run_config, chat_tokenizer, binary_search, row("game:GuessTheNumbr-v0-easy", 0)),
              "Did you mean: .*game:GuessTheNumber-v0-easy")


def test_history_wrappers_are_refused(written_run, chat_tokenizer):
    config = compose_config(written_run.config, ["gem.wrappers=concat_chat"])
    gem_error(lambda: play(config, chat_tokenizer, binary_search, row(EASY, 0)),
              "already keeps the whole conversation")


def test_unknown_config_keys_are_refused(written_run, chat_tokenizer):
    config = compose_config(written_run.config, ["+gem.max_turn=3"])
    gem_error(lambda: play(config, chat_tokenizer, binary_search, row(EASY, 0)), "'max_turn'.*accepted keys")


def test_the_legacy_trainer_is_refused(written_run, chat_tokenizer):
    config = compose_config(written_run.config, ["trainer.use_v1=false"])
    gem_error(lambda: play(config, chat_tokenizer, binary_search, row(EASY, 0)), "use_v1")


def test_rewards_need_one_run_of_model_tokens_per_turn():
    from gem_adapters.common.turns import rewards_on_turn_ends, turn_end_positions

    assert turn_end_positions([1, 1, 0, 0, 1, 0, 1, 1]) == [1, 4, 7]
    assert rewards_on_turn_ends([0, 1, 1, 0, 1], [0.5, 2.0]).tolist() == [0.0, 0.0, 0.5, 0.0, 2.0]
    with pytest.raises(GemError, match="2 model turn\\(s\\) but 3 reward"):
        rewards_on_turn_ends([1, 0, 1], [0.1, 0.2, 0.3])


def test_an_environment_failing_mid_episode_fails_it_with_no_token_trained_on(run_config, chat_tokenizer, caplog):
    with failing.registered() as env_id, caplog.at_level("ERROR", logger="gem_adapters"):
        output, server = play(run_config, chat_tokenizer, lambda prompt: "\\boxed{3}", row(env_id, 4))
    assert output.extra_fields["gem_stop"] == "failed" and len(server.calls) == 2
    failure = output.extra_fields["gem_failure"]
    assert (failure["kind"], failure["phase"], failure["turn"]) == ("error", "step", 1)
    assert failing.MESSAGE in failure["error"] and failing.MESSAGE in caplog.text and env_id in caplog.text
    # what was played stays (both answers and the observation between), but nothing of it is trained on
    first, second = server.generated
    assert output.response_ids[:len(first)] == first and output.response_ids[-len(second):] == second
    assert not any(output.response_mask) and output.turn_rewards == [] and output.reward_score == 0.0
    assert not output.as_dict()["rm_scores"].any()
    info = output.extra_fields["reward_extra_info"]
    assert info["failed"] == 1.0 and info["failed_error"] == 1.0 and info["failed_deadline"] == 0.0


class NeverStarts(failing.FailsAtTurnTwo):
    def reset(self, seed=None, **options):
        raise OSError(f"no puzzle for seed {seed}")


def test_an_environment_failing_to_reset_fails_the_episode_before_any_generation(run_config, chat_tokenizer, caplog):
    if "test:NeverStarts-v0" not in {spec.id for spec in gem_core.list_envs("test:*")}:
        gem_core.register("test:NeverStarts-v0", NeverStarts)
    with caplog.at_level("WARNING", logger="gem_adapters"):
        output, server = play(run_config, chat_tokenizer, lambda prompt: "\\boxed{3}", row("test:NeverStarts-v0", 4),
                              logprobs=True)
    assert not server.calls and output.extra_fields["gem_stop"] == "failed"
    assert output.extra_fields["gem_failure"]["phase"] == "reset" and output.turn_rewards == []
    assert "no puzzle for seed" in chat_tokenizer.decode(output.prompt_ids)
    assert len(output.response_ids) == 1 and output.response_mask == [0]  # verl needs a response token
    assert output.response_logprobs == [0.0]
    assert caplog.text.count("failed to reset") == 3  # the seed, then two others


class StallingServer(ScriptedServer):
    """Answers the first turn, then never again (a wedged inference server)."""

    async def generate(self, request_id, **kwargs):
        if self.calls:
            self.calls.append({})
            await asyncio.sleep(60)
        return await super().generate(request_id, **kwargs)


class HangingTool(Env):
    """Its second step blocks for a minute (a tool that hangs)."""

    def reset(self, seed=None, **options):
        super().reset(seed)
        self.turn = 0
        return "Say anything.", {}

    def step(self, action):
        self.turn += 1
        if self.turn == 2:
            import time

            time.sleep(60)
        return "Again.", 0.5, False, False, {}


@pytest.mark.parametrize("stall, phase", [("server", "policy"), ("environment", "step")])
def test_an_episode_past_its_deadline_fails_however_it_stalled(written_run, chat_tokenizer, stall, phase):
    import time

    config = compose_config(written_run.config, ["gem.episode_deadline=0.5"])
    env_id = "testpack:Countdown-v0" if stall == "server" else "testpack:HangingTool-v0"
    gem_core.register("testpack:HangingTool-v0", HangingTool)
    try:
        server = (StallingServer if stall == "server" else ScriptedServer)(chat_tokenizer, lambda prompt: "\\boxed{3}")

        async def go():
            loop = make_agent_loop(config, server, chat_tokenizer)
            return await loop.run({"logprobs": False}, **row(env_id, 1))

        started = time.monotonic()
        output = asyncio.run(go())
        elapsed = time.monotonic() - started
    finally:
        gem_core.registry.deregister("testpack:HangingTool-v0")
    assert elapsed < 10, elapsed
    failure = output.extra_fields["gem_failure"]
    assert (failure["kind"], failure["phase"], failure["turn"]) == ("deadline", phase, 1)
    assert output.extra_fields["gem_stop"] == "failed" and not any(output.response_mask)
    assert output.response_ids[:len(server.generated[0])] == server.generated[0]  # the first answer is kept, masked
    assert output.extra_fields["reward_extra_info"]["failed_deadline"] == 1.0


class Swatch(gem_core.Env):
    """A visual task: a square of a seeded colour and a question; one answer ends it (reward 1 for
    the colour's name). With ``turns=2`` a text-only follow-up comes first."""

    COLOURS = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255)}

    def __init__(self, turns: int = 1):
        self.turns = turns

    def reset(self, seed=None, **options):
        from PIL import Image

        super().reset(seed)
        self.colour, self.left = self.rng.choice(sorted(self.COLOURS)), self.turns
        return "<image>\nWhich colour is this square?", {"images": [Image.new("RGB", (32, 32), self.COLOURS[self.colour])]}

    def step(self, action):
        self.left -= 1
        if self.left:
            return "Are you sure? Answer again.", 0.0, False, False, {}
        return "Thanks.", float(self.colour in action), True, False, {}


@pytest.fixture(scope="module")
def vl_processor(chat_tokenizer):
    """A real Idefics3 (SmolVLM layout) processor around the test tokenizer: 32-pixel images of 4
    image tokens, the chat template the core stage's vision tests use."""
    from transformers import Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    template = Path(__file__).parents[2] / "vision" / "idefics3_template.jinja"
    images = Idefics3ImageProcessorPil(size={"longest_edge": 64}, max_image_size={"longest_edge": 32},
                                       do_image_splitting=False)
    return Idefics3Processor(image_processor=images, tokenizer=chat_tokenizer, image_seq_len=4,
                             chat_template=template.read_text())


@pytest.mark.parametrize("turns", [1, 2])
def test_a_visual_tasks_images_reach_the_server_and_verls_multimodal_fields(run_config, vl_processor, turns):
    gem_core.register("testpack:Swatch-v0", Swatch, turns=turns)
    try:
        tokenizer = vl_processor.tokenizer
        output, server = play(run_config, tokenizer, lambda prompt: "It is red.", row("testpack:Swatch-v0", 0),
                              processor=vl_processor)
    finally:
        gem_core.registry.deregister("testpack:Swatch-v0")
    images = output.multi_modal_data["images"]
    assert len(images) == 1 and images[0].size == (32, 32)
    image_token = tokenizer.convert_tokens_to_ids(vl_processor.image_token)
    assert output.prompt_ids.count(image_token) == 4  # the placeholder, expanded into the image's tokens
    assert len(server.calls) == turns and all(call["image_data"] == images for call in server.calls)
    assert len(runs(output.response_mask)) == turns


def test_images_after_the_first_observation_are_refused(run_config, vl_processor):
    class Slideshow(Swatch):
        def step(self, action):
            observation, info = self.reset()
            return observation, 0.0, False, False, info

    gem_core.register("testpack:Slideshow-v0", Slideshow)
    try:
        with pytest.raises(GemError, match="shows images after its first observation"):
            play(run_config, vl_processor.tokenizer, lambda prompt: "red", row("testpack:Slideshow-v0", 0),
                 processor=vl_processor)
    finally:
        gem_core.registry.deregister("testpack:Slideshow-v0")

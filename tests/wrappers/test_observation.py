"""Observation formats against hand-written expectations, including a real chat template."""

import asyncio

import pytest

import gem_core
from gem_core import Env, GemError
from gem_core.wrappers import HistoryWrapper, wrap
from tests.helpers import run_python

SYSTEM = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"


class Script(Env):
    """Replays a script: reset gives ``first``; each step gives the next (observation, info)."""

    def __init__(self, first=("task", {"suffix": "Go."}), steps=()):
        self.first, self.steps = first, list(steps)

    def reset(self, seed=None, **options):
        super().reset(seed)
        self.t = 0
        return self.first[0], dict(self.first[1])

    def step(self, action):
        observation, info = self.steps[self.t]
        self.t += 1
        return observation, float(self.t), self.t == len(self.steps), False, dict(info)


STEPS = [("one", {"suffix": "Go."}), ("two\n", {}), ("three", {"suffix": "Go."})]


def run(wrapper, actions=("a1", "a2", "a3")):
    observations = [wrapper.reset(seed=0)[0]]
    for action in actions:
        observations.append(wrapper.step(action)[0])
    return observations


def test_concat():
    assert run(HistoryWrapper(Script(steps=STEPS), "concat")) == [
        "task\nGo.",
        "task\nGo.\none\nGo.",
        "task\nGo.\none\nGo.\ntwo\n",
        "task\nGo.\none\nGo.\ntwo\nthree\n",  # the last step ends the episode: no suffix
    ]


def test_concat_with_action():
    assert run(HistoryWrapper(Script(steps=STEPS), "concat_with_action")) == [
        "task\nGo.",
        "task\nGo.\na1\none\nGo.",
        "task\nGo.\na1\none\nGo.\na2\ntwo\n",
        "task\nGo.\na1\none\nGo.\na2\ntwo\na3\nthree\n",
    ]


def test_max_history_length_keeps_the_task_and_the_last_turns():
    with_actions = HistoryWrapper(Script(steps=STEPS), "concat_with_action", max_history_length=1)
    assert run(with_actions)[-2:] == ["task\nGo.\na2\ntwo\n", "task\nGo.\na3\nthree\n"]
    plain = HistoryWrapper(Script(steps=STEPS), "concat", max_history_length=2)
    assert run(plain)[-1] == "task\nGo.\ntwo\nthree\n"
    assert run(with_actions)[0] == "task\nGo."  # a new episode forgets the old one


def test_prefix_use_tool_and_parsed_action():
    steps = [("result 42", {"use_tool": True, "parsed_action": "<python>6*7</python>"}),
             ("done", {"prefix": "NOTE: "})]
    wrapper = HistoryWrapper(Script(("task", {}), steps), "concat_with_action")
    assert run(wrapper, ["think... <python>6*7</python> more", "x"]) == [
        "task\n",
        "task\n<python>6*7</python>\nresult 42\n",
        "task\n<python>6*7</python>\nresult 42\nx\nNOTE: done\n",
    ]


def test_concat_chat_with_a_real_chat_template(smollm2_tokenizer):
    wrapper = HistoryWrapper(Script(steps=STEPS), "concat_chat", tokenizer=smollm2_tokenizer)
    observations = run(wrapper, ["a1", "a2"])
    assert observations == [
        SYSTEM + "<|im_start|>user\ntask\nGo.<|im_end|>\n<|im_start|>assistant\n",
        SYSTEM + "<|im_start|>user\ntask\nGo.<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n"
                 "<|im_start|>user\none\nGo.<|im_end|>\n<|im_start|>assistant\n",
        SYSTEM + "<|im_start|>user\ntask\nGo.<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n"
                 "<|im_start|>user\none\nGo.<|im_end|>\n<|im_start|>assistant\na2<|im_end|>\n"
                 "<|im_start|>user\ntwo\n<|im_end|>\n<|im_start|>assistant\n",
    ]


def test_concat_chat_tool_messages_and_history_limit(smollm2_tokenizer):
    steps = [("result 42", {"use_tool": True}), ("fine", {})]
    wrapper = HistoryWrapper(Script(("task", {}), steps), "concat_chat", tokenizer=smollm2_tokenizer,
                                 max_history_length=1)
    first, tool, last = run(wrapper, ["call", "answer"])
    assert tool.endswith("<|im_start|>assistant\ncall<|im_end|>\n<|im_start|>tool\nresult 42<|im_end|>\n"
                         "<|im_start|>assistant\n")
    assert last == (SYSTEM + "<|im_start|>user\ntask<|im_end|>\n<|im_start|>assistant\nanswer<|im_end|>\n"
                    "<|im_start|>user\nfine<|im_end|>\n<|im_start|>assistant\n")


def test_concat_chat_on_reset(smollm2_tokenizer):
    wrapper = HistoryWrapper(Script(steps=STEPS), "concat_chat_on_reset", tokenizer=smollm2_tokenizer)
    head = SYSTEM + "<|im_start|>user\ntask\nGo.<|im_end|>\n<|im_start|>assistant\n"
    assert run(wrapper, ["a1", "a2"]) == [
        SYSTEM + "<|im_start|>user\ntask\nGo.<|im_end|>\n<|im_start|>assistant\n",
        head + "a1\none\nGo.",
        head + "a1\none\nGo.\na2\ntwo\n",
    ]


def test_tokenizer_by_path_and_through_make_vec(smollm2_tokenizer, smollm2_tokenizer_dir):
    by_path = HistoryWrapper(Script(steps=STEPS), "concat_chat", tokenizer=str(smollm2_tokenizer_dir))
    by_object = HistoryWrapper(Script(steps=STEPS), "concat_chat", tokenizer=smollm2_tokenizer)
    assert run(by_path) == run(by_object)
    with gem_core.make_vec("game:GuessTheNumber-v0-hard", 2, wrappers="concat_chat,episode_tracking",
                           wrapper_options={"tokenizer": smollm2_tokenizer}) as vec:
        observations, infos = vec.reset()
        assert observations[0].startswith(SYSTEM + "<|im_start|>user\nLet's play Guess The Number.")
        assert observations[0].endswith("Enter your guess.<|im_end|>\n<|im_start|>assistant\n")
        observations, *_, infos = vec.step([r"\boxed{0}", r"\boxed{0}"])
        assert ("<|im_start|>assistant\n\\boxed{0}<|im_end|>\n<|im_start|>user\nTurn 1: 0 is outside the range"
                in observations[0])
        assert infos[0]["step_counter"] == 1


class NoTemplate:
    chat_template = None

    def apply_chat_template(self, messages, **kwargs):
        raise AssertionError("not reached")


@pytest.mark.parametrize("kwargs, message", [
    ({"format": "concat_xml"}, "Unknown observation format"),
    ({"format": "concat", "max_history_length": 0}, "positive integer"),
    ({"format": "concat", "max_history_length": True}, "positive integer"),
    ({"format": "concat_chat"}, "needs a tokenizer"),
    ({"format": "concat_chat_on_reset", "tokenizer": object()}, "apply_chat_template"),
    ({"format": "concat_chat", "tokenizer": NoTemplate()}, "no chat template"),
])
def test_bad_options_raise_clear_errors(kwargs, message):
    with pytest.raises(GemError, match=message):
        HistoryWrapper(Script(), **kwargs)


class AsyncScript(Script):
    async def astep(self, action):
        await asyncio.sleep(0)
        return super().step(action)

    def step(self, action):
        raise AssertionError("the async path must not call step")


def test_native_async_path_gives_the_same_observations():
    async def run_async(wrapper):
        observations = [(await wrapper.areset(seed=0))[0]]
        for action in ("a1", "a2", "a3"):
            observations.append((await wrapper.astep(action))[0])
        return observations

    chained = wrap(AsyncScript(steps=STEPS), "concat_with_action,episode_tracking")
    expected = run(wrap(Script(steps=STEPS), "concat_with_action,episode_tracking"))
    assert asyncio.run(run_async(chained)) == expected


@pytest.mark.parametrize("format", ["concat", "concat_with_action", "concat_chat", "concat_chat_on_reset"])
@pytest.mark.parametrize("env_id", ["game:GuessTheNumber-v0-easy", "game:Sudoku-v0-easy", "game:Wordle-v0-easy",
                                    "game:Minesweeper-v0-easy", "game:TowerofHanoi-v0-easy"])
def test_each_rendering_extends_the_last(env_id, format, smollm2_tokenizer):
    """What the agent saw at each turn reappears unchanged at the start of every later turn's
    observation: the history shows each observation as it was seen."""
    options = {"tokenizer": smollm2_tokenizer} if format.startswith("concat_chat") else {}
    env = wrap(gem_core.make(env_id), format, **options)
    seen = env.reset(seed=3)[0]
    for _ in range(4):
        observation, _, terminated, truncated, _ = env.step(env.unwrapped.sample_random_action())
        assert observation.startswith(seen.removesuffix("<|im_start|>assistant\n")), (seen, observation)
        seen = observation
        if terminated or truncated:
            break


@pytest.mark.parametrize("format", ["concat", "concat_with_action", "concat_chat", "concat_chat_on_reset"])
def test_tool_results_are_shown_in_the_history_as_they_were_seen(format, smollm2_tokenizer):
    """A tool's result (a ``tool`` message in the chat formats, with the parsed call standing for
    the action) reads the same in every later turn's history as when the agent saw it."""
    options = {"tokenizer": smollm2_tokenizer} if format.startswith("concat_chat") else {}
    env = wrap(gem_core.make("math:Arithmetic-v0+Tool"), format, **options)
    seen = env.reset(seed=3)[0]
    for action in ("Let me compute.\n<python>print(2 + 2)</python>", "<python>print(6 * 7)</python> and more", "\\boxed{3}"):
        observation, *_ = env.step(action)
        assert observation.startswith(seen.removesuffix("<|im_start|>assistant\n")), (seen, observation)
        seen = observation
    assert "42" in seen and "4\n" in seen


def test_the_wrapper_bases_sit_next_to_wrapper():
    from gem_core.wrappers import EpisodeTrackingWrapper

    assert gem_core.ResultWrapper.__module__ == "gem_core.core" and issubclass(gem_core.ResultWrapper, gem_core.Wrapper)
    assert issubclass(gem_core.HistoryWrapper, gem_core.ResultWrapper) and issubclass(EpisodeTrackingWrapper, gem_core.ResultWrapper)

"""The image contract: placeholders in the text, images in info["images"], content parts for
processors and OpenAI-compatible servers, and the observation wrappers carrying images."""

from __future__ import annotations

import base64
import io
import json

import pytest

from gem_core import Env, GemError
from gem_core.images import IMAGE, chat_message, content_parts, message_images, openai_message
from gem_core.wrappers import HistoryWrapper

PIL = pytest.importorskip("PIL.Image")

COLOURS = ["red", "green", "blue"]


class ShowColour(Env):
    """Each turn shows a plain image of the next colour; the episode ends after three turns."""

    def reset(self, seed=None, **options):
        super().reset(seed)
        self.t = 0
        return self._show()[0], self._show()[1]

    def _show(self):
        image = PIL.new("RGB", (8, 8), COLOURS[self.t])
        return f"Turn {self.t}: {IMAGE} Which colour?", {"images": [image]}

    def step(self, action):
        self.t += 1
        observation, info = self._show() if self.t < 3 else ("Done.", {})
        return observation, 0.0, self.t >= 3, False, info


def colours(images):
    return [image.getpixel((0, 0)) for image in images]


RGB = {"red": (255, 0, 0), "green": (0, 128, 0), "blue": (0, 0, 255)}


def test_content_parts_follow_the_placeholders():
    a, b = PIL.new("L", (2, 2)), PIL.new("L", (3, 3))
    assert content_parts(f"x {IMAGE} y {IMAGE}", [a, b]) == [
        {"type": "text", "text": "x "}, {"type": "image", "image": a}, {"type": "text", "text": " y "},
        {"type": "image", "image": b}]
    assert chat_message("user", "plain") == {"role": "user", "content": "plain"}
    message = chat_message("user", f"{IMAGE}!", [a])
    assert message["content"] == [{"type": "image", "image": a}, {"type": "text", "text": "!"}]
    assert message_images([message, {"role": "assistant", "content": "no"}]) == [a]


def test_a_placeholder_count_that_differs_from_the_images_is_refused():
    with pytest.raises(GemError, match="one image per placeholder"):
        content_parts(f"{IMAGE} {IMAGE}", [PIL.new("L", (2, 2))])


def test_openai_message_sends_images_as_png_data_urls():
    image = PIL.new("RGB", (4, 3), "red")
    message = openai_message(chat_message("user", f"look {IMAGE}", [image]))
    text, picture = message["content"]
    assert text == {"type": "text", "text": "look "}
    url = picture["image_url"]["url"]
    assert picture["type"] == "image_url" and url.startswith("data:image/png;base64,")
    decoded = PIL.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert decoded.size == (4, 3) and decoded.getpixel((0, 0)) == (255, 0, 0)
    json.dumps(message)  # plain JSON, ready for the request body


@pytest.mark.parametrize("format", ["concat", "concat_with_action"])
def test_text_formats_keep_placeholders_and_carry_every_image(format):
    env = HistoryWrapper(ShowColour(), format)
    observation, info = env.reset(seed=0)
    assert observation.count(IMAGE) == 1 and colours(info["images"]) == [RGB["red"]]
    observation, _, _, _, info = env.step("red")
    assert observation.count(IMAGE) == 2 and colours(info["images"]) == [RGB["red"], RGB["green"]]


def test_a_bounded_history_drops_the_images_of_dropped_turns():
    env = HistoryWrapper(ShowColour(), "concat_with_action", max_history_length=1)
    env.reset(seed=0)
    env.step("red")
    observation, _, _, _, info = env.step("green")
    assert observation.count(IMAGE) == 2  # the task's first observation and the last turn
    assert colours(info["images"]) == [RGB["red"], RGB["blue"]]


def test_text_only_observations_keep_their_info_untouched():
    class Plain(ShowColour):
        def _show(self):
            return "no picture", {"k": 1}

    info = HistoryWrapper(Plain(), "concat")
    assert "images" not in info.reset(seed=0)[1]


def test_concat_chat_renders_images_through_a_real_processor(processor):
    env = HistoryWrapper(ShowColour(), "concat_chat", tokenizer=processor)
    env.reset(seed=0)
    prompt, _, _, _, info = env.step("It is red.")
    assert prompt == ("<|im_start|>User: Turn 0: <image> Which colour?<end_of_utterance>\n"
                      "Assistant: It is red.<end_of_utterance>\n"
                      "User: Turn 1: <image> Which colour?<end_of_utterance>\nAssistant:")
    assert colours(info["images"]) == [RGB["red"], RGB["green"]]
    inputs = processor(text=[prompt], images=[info["images"]], return_tensors="pt")
    image_token = processor.tokenizer.convert_tokens_to_ids("<image>")
    assert inputs["pixel_values"].shape[:2] == (1, 2)  # both turns' images
    assert int((inputs["input_ids"] == image_token).sum()) == 2 * processor.image_seq_len


def test_processor_reads_the_image_parts_of_chat_message_directly(processor):
    image = PIL.new("RGB", (20, 10), "blue")
    messages = [chat_message("user", f"What colour? {IMAGE}", [image])]
    inputs = processor.apply_chat_template(messages, tokenize=True, return_dict=True,
                                           add_generation_prompt=True, return_tensors="pt")
    assert inputs["pixel_values"].shape[:2] == (1, 1)
    rendered = processor.tokenizer.decode(inputs["input_ids"][0])
    assert rendered.count("<global-img>") == 1 and rendered.endswith("Assistant:")


def test_concat_chat_on_reset_renders_the_first_image_as_a_part(processor):
    env = HistoryWrapper(ShowColour(), "concat_chat_on_reset", tokenizer=processor)
    first, info = env.reset(seed=0)
    assert first.count("<image>") == 1 and len(info["images"]) == 1
    observation, _, _, _, info = env.step("red")
    assert observation.startswith(first) and observation.endswith(f"red\nTurn 1: {IMAGE} Which colour?\n")
    assert colours(info["images"]) == [RGB["red"], RGB["green"]]

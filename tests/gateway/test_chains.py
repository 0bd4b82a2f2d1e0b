"""The gateway over loopback with a real tokenizer (SmolLM2's, and a Qwen3-style template that drops
earlier reasoning) and the ``openai`` SDK as the harness, in front of a scripted backend over HTTP:
each turn continues from the sampled ids, exactly the sampled ids carry loss mask 1 with their
log-probabilities, a rewritten history opens a new segment, and a retried call is one turn."""

from __future__ import annotations

import re

import httpx
import pytest

from gem_core.episodes import Turn
from gem_core.sampled import INFO_KEY, segments
from tests.gateway.conftest import gateway_over
from tests.gateway.scripted import logprob

openai = pytest.importorskip("openai")

MARK = re.compile(r"<<(\d+):(\d+)>>")
KINDS = ("plain", "non_canonical", "think", "cut", "space")


def scripted(tokenizer):
    """Answers by the last ``<<session:turn>>`` mark in the prompt, a kind per turn."""
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")

    def answer(prompt: list[int]) -> list[int]:
        session, turn = (int(x) for x in MARK.findall(tokenizer.decode(prompt))[-1])
        encode = lambda text: tokenizer.encode(text, add_special_tokens=False)  # noqa: E731
        kind = KINDS[turn % len(KINDS)]
        if kind == "plain":
            return encode(f"Answer {session}.{turn}") + [end]
        if kind == "non_canonical":
            return [i for character in f"Answer {session}.{turn}" for i in encode(character)] + [end]
        if kind == "think":
            return encode(f"<think>\nsession {session} turn {turn}\n</think>\n\nAnswer {session}.{turn}") + [end]
        if kind == "cut":
            return encode(f"Answer {session}.{turn} and then")  # no end-of-turn: cut by the token limit
        return encode(f"Answer {session}.{turn} ") + [end]

    return answer


def play(url: str, key: str, session: int, turns: int, *, stream: bool = False, drop_reasoning: bool = False):
    """A plain ``openai`` SDK loop; returns the messages it ended with."""
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0)
    messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": f"<<{session}:0>> Hi."}]
    for turn in range(turns):
        if stream:
            chunks = list(client.chat.completions.create(model="m", messages=messages, max_tokens=40, stream=True))
            content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        else:
            content = client.chat.completions.create(model="m", messages=messages, max_tokens=40).choices[0].message.content
        if drop_reasoning:
            content = content.split("</think>")[-1].lstrip("\n")
        messages += [{"role": "assistant", "content": content}, {"role": "user", "content": f"<<{session}:{turn + 1}>> More."}]
    return messages


def as_turns(session) -> list[Turn]:
    return [Turn("", "", 0.0, info={INFO_KEY: call.sampled.to_info()}) for call in session.calls]


@pytest.mark.parametrize("template", ["smollm2", "qwen3_style"])
def test_every_prompt_is_the_last_prompt_plus_the_sampled_ids_plus_the_continuation(
        template, smollm2_tokenizer, qwen3_tokenizer):
    tokenizer = smollm2_tokenizer if template == "smollm2" else qwen3_tokenizer
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    with gateway_over(tokenizer, scripted(tokenizer)) as (gateway, url, backend):
        session = gateway.open()
        messages = play(url, session.key, 7, len(KINDS) + 1)
    calls = backend.calls
    assert len(calls) == len(session.calls) == len(KINDS) + 1
    assert [call.sampled.segment for call in session.calls] == [0] * len(calls)
    for k, ((prompt, output), (later, _)) in enumerate(zip(calls, calls[1:])):
        assert later[:len(prompt) + len(output)] == prompt + output, f"turn {k + 1} changed earlier tokens"
        # what follows the answer is the template's text for the new message only (independent of
        # how the gateway finds it: the difference of two full renders)
        answered = messages[:2 + 2 * k] + [messages[2 + 2 * k]]
        before = tokenizer.apply_chat_template(answered, tokenize=False)
        after = tokenizer.apply_chat_template(messages[:4 + 2 * k], tokenize=False, add_generation_prompt=True)
        assert after.startswith(before)
        closing = "" if output[-1] == end else "<|im_end|>"
        rest = tokenizer.decode(later[len(prompt) + len(output):], skip_special_tokens=False)
        assert rest == closing + "\n" + after[len(before):]
    if template == "smollm2":  # a template that shows answers as written: every prompt is a full render as text
        last = tokenizer.apply_chat_template(messages[:-2], tokenize=False, add_generation_prompt=True)
        assert tokenizer.decode(calls[-1][0], skip_special_tokens=False) == last
    else:  # the Qwen3-style render drops earlier reasoning; the chain keeps it as sampled
        assert "<think>" in tokenizer.decode(calls[-1][0])
        assert "<think>" not in tokenizer.apply_chat_template(messages[:-2], tokenize=False)
    (segment,) = segments(as_turns(session))
    assert segment.ids == calls[-1][0] + calls[-1][1]
    sampled = [token for _, output in calls for token in output]
    assert [token for token, bit in zip(segment.ids, segment.mask) if bit] == sampled
    expected = [logprob(k, token) for _, output in calls for k, token in enumerate(output)]
    assert [value for value, bit in zip(segment.logprobs, segment.mask) if bit] == pytest.approx(expected)
    assert [len(output) for _, output in calls] == [end - start for start, end in segment.spans()]


def test_a_history_the_harness_rewrote_starts_a_new_segment_rendered_whole(qwen3_tokenizer):
    tokenizer = qwen3_tokenizer
    with gateway_over(tokenizer, scripted(tokenizer)) as (gateway, url, backend):
        session = gateway.open()
        messages = play(url, session.key, 3, 4, drop_reasoning=True)  # turn 2 answers with reasoning
    segment_of = [call.sampled.segment for call in session.calls]
    assert segment_of == [0, 0, 0, 1]  # the call after the answer whose reasoning was dropped
    reason = session.calls[3].sampled.reason
    assert reason == "messages[6] (assistant) differs from the answer the gateway gave"
    rendered = tokenizer.apply_chat_template(messages[:-2], tokenize=False, add_generation_prompt=True)
    assert backend.calls[3][0] == tokenizer.encode(rendered, add_special_tokens=False)
    first, second = segments(as_turns(session))
    assert (first.turns, second.turns, second.reason) == ([0, 1, 2], [3], reason)
    trained = sum(first.mask) + sum(second.mask)
    assert trained == sum(len(output) for _, output in backend.calls)  # no token is trained twice
    assert second.mask[:second.prompt_length] == [0] * second.prompt_length


def test_a_retried_call_is_answered_again_and_recorded_once(smollm2_tokenizer):
    tokenizer = smollm2_tokenizer
    body = {"model": "m", "messages": [{"role": "user", "content": "<<1:0>> Hi."}], "max_tokens": 20}
    with gateway_over(tokenizer, scripted(tokenizer), retry_window=0.0) as (gateway, url, backend):
        session = gateway.open()
        headers = {"Authorization": f"Bearer {session.key}"}
        first = httpx.post(f"{url}/v1/chat/completions", json=body, headers=headers).json()
        # outside the window, an identical body is a new call, unless the SDK marks it a retry
        again = httpx.post(f"{url}/v1/chat/completions", json=body,
                           headers={**headers, "x-stainless-retry-count": "1"}).json()
        assert again == first and len(backend.calls) == 1 and len(session.calls) == 1
    # the openai SDK's own retry after a timeout, while the first call is still being sampled
    with gateway_over(tokenizer, scripted(tokenizer), delay=1.5) as (gateway, url, backend):
        session = gateway.open()
        client = openai.OpenAI(base_url=f"{url}/v1", api_key=session.key, max_retries=2, timeout=1.0)
        answer = client.chat.completions.create(**body)
        assert answer.choices[0].message.content == "Answer 1.0"
        assert len(backend.calls) == 1 and len(session.calls) == 1 and session.retries_answered >= 1

"""Episodes from agent programs (gem_serve.gateway.runs): a command given the task in its
environment plays through the gateway and the MCP endpoint; a program that crashes, exits
non-zero or runs past its deadline gives a failed episode, and the others of the batch go on."""

from __future__ import annotations

import sys
import time

import pytest

from tests.tito import gateway as path

pytest.importorskip("openai")
GAME = "game:GuessTheNumber-v0-easy"

#: A command-line agent: one model call, its answer sent as the action with the MCP SDK's client.
COMMAND = r'''
import asyncio, os
import openai
from mcp import Client

answer = openai.OpenAI(max_retries=0).chat.completions.create(
    model=os.environ["GEM_MODEL"], messages=[{"role": "user", "content": os.environ["GEM_TASK"]}])
async def main():
    async with Client(os.environ["GEM_MCP_URL"]) as env:
        await env.call_tool("step", {"action": answer.choices[0].message.content})
asyncio.run(main())
'''


def guess_five(tokenizer):
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    return lambda prompt: tokenizer.encode(r"\boxed{5}", add_special_tokens=False) + [end]


def crashes(task):
    import openai

    openai.OpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0).chat.completions.create(
        model=task.model, messages=[{"role": "user", "content": task.observation}])
    raise RuntimeError("the harness broke")


def hangs(task):
    time.sleep(8)  # past the 2 s deadline; the thread is left to finish on its own


def test_a_command_plays_through_the_gateway_and_the_mcp_endpoint(smollm2_tokenizer):
    pytest.importorskip("mcp")
    (episode,) = path.play(smollm2_tokenizer, guess_five(smollm2_tokenizer), GAME, [3],
                           agent=[sys.executable, "-c", COMMAND])
    assert episode.failure is None and episode.num_turns == 1
    assert episode.turns[0].info["steps"][0]["step_count"] == 1  # the answer, stepped over MCP
    assert episode.turns[0].action == r"\boxed{5}" and "you guessed 5" in episode.final_observation


def test_programs_that_crash_fail_or_hang_give_failed_episodes(smollm2_tokenizer, monkeypatch):
    import gem_serve.gateway.runs as runs

    started = time.monotonic()
    programs = {"crashes": crashes, "exits": [sys.executable, "-c", "import sys; print('no key'); sys.exit(3)"],
                "hangs": hangs}
    found = {}
    for name, program in programs.items():
        monkeypatch.setattr(runs.Harness, "__init__", _short(runs.Harness.__init__))
        (found[name],) = path.play(smollm2_tokenizer, guess_five(smollm2_tokenizer), GAME, [1], agent=program)
    crash, exit_, hang = found["crashes"], found["exits"], found["hangs"]
    assert (crash.failure.kind, crash.failure.phase) == ("harness", "agent") and "the harness broke" in crash.failure.error
    assert crash.num_turns == 1 and crash.outcome == "failed"  # its call is kept, and trains nothing
    assert exit_.failure.kind == "harness" and "status 3" in exit_.failure.error and "no key" in exit_.failure.error
    assert hang.failure.kind == "deadline" and time.monotonic() - started < 20


def _short(init):
    def patched(self, *args, **kwargs):
        init(self, *args, **{**kwargs, "timeout": 2.0})
    return patched

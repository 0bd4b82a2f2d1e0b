"""An agent program GEM does not run: a plain ``openai`` SDK loop, the observations as user
messages (the one in docs/gateway.md). verl's Ray workers import it as ``plain_openai:play`` (the
test puts this folder on their ``PYTHONPATH``); it appends what it got from the gateway to the
file ``GEM_TEST_AGENT_LOG`` names, one JSON line per episode, for the test to compare with what
verl trained on."""

import json
import os

import openai


def play(task):
    client = openai.OpenAI(base_url=task.base_url, api_key=task.api_key)
    messages = [{"role": "user", "content": task.observation}]
    answers, sampled = [], []
    try:
        while True:
            completion = client.chat.completions.create(model=task.model, messages=messages)
            answer = completion.choices[0].message.content
            answers.append(answer)
            sampled.append(completion.usage.completion_tokens)
            result = task.step(answer)
            if result.done:
                return
            messages += [{"role": "assistant", "content": answer}, {"role": "user", "content": result.observation}]
    finally:
        with open(os.environ["GEM_TEST_AGENT_LOG"], "a") as log:
            log.write(json.dumps({"seed": task.seed, "answers": answers, "sampled": sampled}) + "\n")

"""The customer-service task's user played by a model: what the model is told (the hidden goal,
the conversation from the customer's side), a full graded episode, a server that fails, and the
real SmolLM2 behind `transformers serve` as the customer, from Python and from `gem eval`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import gem_core
from gem_core.endpoint import EndpointError
from gem_envs.multiagent.customer_service import GREETING, STOP, CustomerServiceEnv, load_tasks
from gem_envs.multiagent.llm_user import LLMUser
from gem_envs.multiagent.retail_store import fresh_store
from tests.multiagent.test_customer_service import ground_truth

ASSISTANT_VIEW = "multiagent:RetailService-v0-assistant"
TASKS = load_tasks()


def customer(index: int):
    """A stub customer for task ``index`` that answers what it is asked, as a good user model would."""
    task = TASKS[index]
    profile = fresh_store()["users"][task["user_id"]]

    def answer(body: dict) -> str:
        said = body["messages"][-1]["content"].lower()
        if said == GREETING.lower():
            return task["request"]
        if "proceed" in said:
            return "Yes, please."
        if "done" in said:
            return f"Thank you! {STOP}"
        return f"My email is {profile['email']}."

    return answer


def user_settings(server, **options) -> dict:
    return {"model": server.model, "base_url": server.base_url, **options}


def test_the_model_is_told_the_hidden_goal_and_sees_the_conversation_from_the_customers_side(stub_chat_server):
    task = TASKS[5]
    profile = fresh_store()["users"][task["user_id"]]
    stub_chat_server.answer = customer(5)
    env = gem_core.make(ASSISTANT_VIEW, task_index=5, user=user_settings(stub_chat_server))
    observation, _ = env.reset(seed=0)
    assert observation.endswith(f"User: {task['request']}")
    observation, *_ = env.step("Hello! Could you give me your email?")
    assert observation == f"User: My email is {profile['email']}."
    opening, reply = stub_chat_server.requests
    goal = opening["messages"][0]
    assert goal["role"] == "system"
    knows = task["knows"]
    for detail in (profile["name"], profile["email"], f"zip code is {profile['zip']}", task["request"],
                   knows["order_id"], *knows["item_ids"], *knows["new_variant_ids"], STOP, "say yes"):
        assert detail in goal["content"]
    assert opening["messages"][1:] == [{"role": "user", "content": GREETING}]
    assert reply["messages"][1:] == [{"role": "user", "content": GREETING},
                                     {"role": "assistant", "content": task["request"]},
                                     {"role": "user", "content": "Hello! Could you give me your email?"}]
    assert opening["max_tokens"] == 256 and opening["temperature"] == 0.0


@pytest.mark.parametrize("index", [0, 5])
def test_a_model_user_that_confirms_and_stops_completes_a_graded_episode(stub_chat_server, index):
    stub_chat_server.answer = customer(index)
    env = gem_core.make(ASSISTANT_VIEW, task_index=index, user=user_settings(stub_chat_server))
    env.reset(seed=0)
    total, done, info = 0.0, False, {}
    for action in ground_truth(index):
        _, reward, terminated, truncated, info = env.step(action)
        total += reward
        if terminated or truncated:
            done = terminated
            break
    assert done and total == 1.0 and info["outcome"] == "win"
    assert env.unwrapped.dialogue[-1] == ("user", f"Thank you! {STOP}")


def test_the_request_seed_follows_the_episode_seed(stub_chat_server):
    stub_chat_server.answer = customer(0)
    env = CustomerServiceEnv(task_index=0, user=user_settings(stub_chat_server, temperature=0.7))
    for seed in (3, 3, 4):
        env.reset(seed=seed)
    first, again, other = (request["seed"] for request in stub_chat_server.requests)
    assert first == again != other and stub_chat_server.requests[0]["temperature"] == 0.7


@pytest.mark.timeout(60)
def test_a_user_server_that_fails_is_a_clear_error_and_a_fault_in_a_vector_env(stub_chat_server):
    replies = iter(["I want to cancel an order.", (503, {"error": {"message": "overloaded"}})])
    stub_chat_server.answer = lambda body: next(replies)
    settings = user_settings(stub_chat_server, max_retries=0)
    env = gem_core.make(ASSISTANT_VIEW, task_index=0, user=settings)
    env.reset(seed=0)
    with pytest.raises(EndpointError, match="refused the request.*HTTP 503.*overloaded"):
        env.step("Which order?")

    stub_chat_server.answer = lambda body: (503, {"error": {"message": "overloaded"}}) \
        if body["messages"][-1]["content"] == "Which order?" else "I want to cancel an order."
    with gem_core.make_vec(ASSISTANT_VIEW, num_envs=1, mode="sync", task_index=0, user=settings) as vec:
        vec.reset()
        _, rewards, terminated, truncated, infos = vec.step(["Which order?"])
    assert truncated[0] and not terminated[0] and rewards[0] == 0.0
    assert infos[0]["fault"]["kind"] == "error" and "overloaded" in infos[0]["fault"]["error"]


@pytest.mark.parametrize(("options", "message"), [
    ({"user": {"modle": "m"}}, "does not take 'modle'; it takes: model, base_url"),
    ({"user": {"base_url": "http://127.0.0.1:9/v1"}}, "needs model"),
    ({"user": "gpt-4o"}, "user= takes an LLMUser or its settings"),
    ({"user": {"model": "m"}, "user_policy": str}, "not both"),
    ({"user": {"model": "m", "timeout": 0}}, "timeout must be a positive number"),
])
def test_mistaken_user_settings_are_refused_when_the_env_is_made(options, message):
    with pytest.raises(gem_core.GemError, match=message):
        gem_core.make("multiagent:RetailService-v0", **options)


def test_an_llm_user_object_is_taken_as_it_is(stub_chat_server):
    user = LLMUser(stub_chat_server.model, base_url=stub_chat_server.base_url)
    env = CustomerServiceEnv(user=user)
    assert env.llm_user is user and env.blocking


# ---- the real SmolLM2, served by `transformers serve` ----

def test_smollm2_plays_the_customer(smollm2_server):
    settings = user_settings(smollm2_server, max_tokens=24)
    env = gem_core.make(ASSISTANT_VIEW, task_index=0, max_turns=2, user=settings)
    observation, _ = env.reset(seed=0)
    dialogue = env.unwrapped.dialogue
    speaker, opening = dialogue[1]
    assert speaker == "user" and opening.strip() and observation.endswith(f"User: {opening}")
    question = "Could you give me your email address?"
    observation, _, terminated, _, _ = env.step(question)
    if not terminated:  # the model may end the conversation at once
        assert observation == f"User: {dialogue[-1][1]}" and dialogue[-2] == ("assistant", question)
        _, _, terminated, truncated, info = env.step("Which order would you like to cancel?")
        assert (terminated or truncated) and info["outcome"] in ("win", "loss")
    again = gem_core.make(ASSISTANT_VIEW, task_index=0, max_turns=2, user=settings)
    assert again.reset(seed=0)[0] == env.reset(seed=0)[0]  # greedy: the same opening


@pytest.mark.timeout(600)
def test_gem_eval_scores_a_policy_against_smollm2_as_the_customer(smollm2_server, tmp_path):
    user = json.dumps(user_settings(smollm2_server, max_tokens=16))
    done = subprocess.run(
        [sys.executable, "-m", "gem_core.cli", "eval", "--base-url", smollm2_server.base_url, "--model",
         smollm2_server.model, "--env", ASSISTANT_VIEW, "--env-arg", f"user={user}", "--env-arg", "max_turns=2",
         "--env-arg", "task_index=0", "--episodes", "1", "--max-new-tokens", "8", "--timeout", "300",
         "--output-dir", str(tmp_path)],
        check=False, capture_output=True, text=True, timeout=540, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    episode, = map(json.loads, (tmp_path / "episodes.jsonl").read_text().splitlines())
    assert episode["env_id"] == ASSISTANT_VIEW and 1 <= len(episode["turns"]) <= 2
    assert episode["turns"][-1]["info"]["outcome"] in ("win", "loss")
    first_prompt = json.loads(episode["turns"][0]["observation"])  # the chat messages the policy was sent
    assert first_prompt[0]["content"].startswith("You are a customer-service assistant")
    assert "\nUser: " in first_prompt[0]["content"]  # with the model customer's opening

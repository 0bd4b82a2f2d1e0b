"""The customer-service task: graded as TAU-bench grades (the final store against the ground
truth's, and the required amounts said), tools that enforce the policy, and the scripted user."""

from __future__ import annotations

import json

import pytest

import gem_core
from gem_envs.multiagent.customer_service import STOP, CustomerServiceEnv, load_tasks
from gem_envs.multiagent.retail_store import fresh_store
from gem_core.wrappers.seats import Versus

TASKS = load_tasks()


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def assistant(index: int) -> Versus:
    """The task as the policy plays it: the assistant's seat, the scripted user on the other."""
    env = Versus(CustomerServiceEnv(task_index=index), seat="assistant")
    env.reset(seed=0)
    return env


def play(env: Versus, actions: list[str]) -> tuple[str, float, bool, dict]:
    total, observation, done, info = 0.0, "", False, {}
    for action in actions:
        observation, reward, terminated, truncated, info = env.step(action)
        total += reward
        done = terminated or truncated
        if done:
            break
    return observation, total, done, info


def ground_truth(index: int, *, skip: int | None = None, amounts: list[str] | None = None) -> list[str]:
    """The assistant's side of a correct conversation: authenticate, ask for a yes before each
    change, make it, and tell the amounts (``skip`` leaves one change out)."""
    task = TASKS[index]
    email = fresh_store()["users"][task["user_id"]]["email"]
    actions = [call("find_user_id_by_email", email=email)]
    for number, action in enumerate(task["actions"]):
        if number == skip:
            continue
        actions += ["I will make this change. Shall I proceed?", call(action["name"], **action["arguments"])]
    said = " and ".join(task["outputs"] if amounts is None else amounts)
    actions.append(f"All done: your request has been processed. Amounts: {said or 'none'}.")
    return actions


@pytest.mark.parametrize("index", range(len(TASKS)))
def test_replaying_the_ground_truth_scores_1(index):
    _, total, done, info = play(assistant(index), ground_truth(index))
    assert done and total == 1.0 and info["outcome"] == "win"


def test_leaving_out_a_required_change_scores_0():
    _, total, done, info = play(assistant(8), ground_truth(8, skip=0))
    assert done and total == 0.0 and info["outcome"] == "loss"


def test_stating_a_wrong_amount_scores_0():
    _, total, done, _ = play(assistant(0), ground_truth(0, amounts=["96.99"]))
    assert done and total == 0.0


def test_a_policy_violation_scores_0():
    # the user wants to cancel for a reason the policy refuses; cancelling anyway under another reason
    task = TASKS[9]
    assert task["actions"] == [] and task["knows"]["reason"] == "I found a better price elsewhere"
    violating = ground_truth(9)[:1] + ["I will cancel #W1035. Shall I proceed?",
                                       call("cancel_pending_order", order_id="#W1035", reason="no longer needed"),
                                       "Done: your order has been cancelled."]
    _, total, done, _ = play(assistant(9), violating)
    assert done and total == 0.0
    _, total, done, _ = play(assistant(9), ground_truth(9))  # refusing is right
    assert done and total == 1.0


@pytest.mark.parametrize(("action", "error"), [
    (call("cancel_pending_order", order_id="#W1007", reason="no longer needed"), "authenticate the user first"),
    ('<tool_call>{"name": "cancel_pending_order", "arguments": </tool_call>', "not valid JSON"),
    (call("refund_everything"), "unknown tool"),
    (call("get_order_details", order="#W1007"), "wrong arguments"),
])
def test_a_refused_or_malformed_call_gets_an_error_and_the_episode_goes_on(action, error):
    env = assistant(0)
    store = json.dumps(env.env.store.data, sort_keys=True)
    observation, reward, terminated, truncated, info = env.step(action)
    assert observation.startswith("Tool result: Error") and error in observation
    assert not (terminated or truncated) and info["tool_error"]
    assert json.dumps(env.env.store.data, sort_keys=True) == store


def test_changes_need_the_users_yes_and_the_right_order_state():
    env = assistant(0)
    env.step(ground_truth(0)[0])  # authenticated
    observation, *_ = env.step(call("cancel_pending_order", order_id="#W1007", reason="no longer needed"))
    assert "not confirmed" in observation
    env.step("Shall I proceed?")
    observation, *_ = env.step(call("cancel_pending_order", order_id="#W1014", reason="no longer needed"))
    assert "delivered; only pending orders" in observation
    observation, *_ = env.step(call("get_order_details", order_id="#W1021"))  # someone else's order
    assert "has no order '#W1021'" in observation


def test_the_scripted_user_reveals_details_only_when_asked():
    env = assistant(0)
    observation, *_ = env.step("Hello! What can I do?")
    assert "@" not in observation
    observation, *_ = env.step("Could you tell me the email on your account?")
    assert "ava.moreno@example.com" in observation


def test_a_seed_replays_the_task_and_the_conversation():
    transcripts = []
    for _ in range(2):
        env = gem_core.make("multiagent:RetailService-v0-assistant")
        observation, _ = env.reset(seed=5)
        transcripts.append([observation] + [env.step(a)[0] for a in ("What is your email?", "Which order id?")])
    assert transcripts[0] == transcripts[1]


def test_a_user_policy_replaces_the_scripted_user():
    heard = []

    def user(observation: str) -> str:
        heard.append(observation)
        return f"Never mind. {STOP}" if len(heard) > 1 else "Hi, I need help with an order."

    env = Versus(CustomerServiceEnv(task_index=0, user_policy=user), seat="assistant")
    observation, _ = env.reset(seed=0)
    assert observation.endswith("User: Hi, I need help with an order.")
    observation, reward, terminated, _, _ = env.step("Which order?")
    assert terminated and reward == 0.0 and "Assistant: Which order?" in heard[-1]


def test_the_assistant_turn_limit_truncates_and_grades():
    env = Versus(CustomerServiceEnv(task_index=0, max_turns=2), seat="assistant")
    env.reset(seed=0)
    env.step(call("get_product_details", product_id="P1"))
    _, reward, terminated, truncated, info = env.step(call("get_product_details", product_id="P2"))
    assert truncated and not terminated and reward == 0.0 and info["outcome"] == "loss"

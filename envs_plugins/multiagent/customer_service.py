"""A tool-using customer-service task modelled on TAU-bench retail: an ``assistant`` serves a
``user`` of an online store (:mod:`gem_envs.multiagent.retail_store`), calling tools under a
written policy while the user, who knows their own details and request, answers its questions.

Turns: the user's request is in the assistant's first observation (with the policy and the
tools). An assistant action holding ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
calls that tool (the last such block counts) and the assistant goes on with the result; any
other action is a message to the user, who answers. A malformed call gets an ``Error: ...``
result and the episode goes on. The episode ends when the user's message holds ``###STOP###``
or after ``max_turns`` assistant turns (truncated).

Grading, as TAU-bench grades: reward 1 (to both agents) when the store at the end equals the
store after replaying the task's ground-truth tool calls, and every amount the task requires
appears in some assistant message; otherwise 0. ``info["outcome"]`` is ``win`` or ``loss``.

The user is scripted and deterministic by default (:meth:`CustomerServiceEnv.scripted_action`): it
states its request, gives its email, name and zip code, order id, reason, items, new variants or
address when asked, confirms with "yes" when asked to confirm, and stops once told the request is
done (or after two replies that ask nothing it can answer). ``user`` replaces it with a model
behind an OpenAI-compatible endpoint that plays the customer with the task's hidden goal
(:mod:`gem_envs.multiagent.llm_user`); ``user_policy`` with any callable of the user's observation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gem_core.errors import GemError
from gem_core.multiagent import AgentDicts, MultiAgentEnv

from gem_envs.multiagent.llm_user import LLMUser, goal
from gem_envs.multiagent.retail_store import POLICY, Store, replayed

TASKS_FILE = Path(__file__).with_name("customer_service_tasks.json")
STOP = "###STOP###"
GREETING = "Hello, how can I help you?"
TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
TOOLS = """Tools: find_user_id_by_email(email); find_user_id_by_name_zip(first_name, last_name, zip);
get_user_details(user_id); get_order_details(order_id); get_product_details(product_id);
cancel_pending_order(order_id, reason); modify_pending_order_address(order_id, address);
return_delivered_order_items(order_id, item_ids); exchange_delivered_order_items(order_id, item_ids, new_variant_ids);
modify_user_address(user_id, address); transfer_to_human_agents(summary)."""
DONE_WORDS = ("cancelled", "refunded", "has been", "updated", "will ship", "exchange accepted", "completed",
              "processed", "done")
CONFIRM_WORDS = ("confirm", "proceed", "shall i", "should i", "would you like me to", "go ahead", "is that correct")


def load_tasks() -> list[dict[str, Any]]:
    return json.loads(TASKS_FILE.read_text(encoding="utf-8"))


def tool_call(action: str) -> tuple[str, Any] | str | None:
    """The action's last tool call as ``(name, arguments)``, an error text for a malformed one,
    or None for a message."""
    blocks = TOOL_CALL.findall(action) if isinstance(action, str) else []
    if not blocks:
        return None
    try:
        call = json.loads(blocks[-1])
    except json.JSONDecodeError as error:
        return f"Error: the tool call is not valid JSON ({error.msg})."
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return 'Error: a tool call is {"name": TOOL, "arguments": {...}}.'
    return call["name"], call.get("arguments", {})


class CustomerServiceEnv(MultiAgentEnv):
    """See the module documentation. ``task_index`` fixes the task (default: drawn per seed).

    ``user`` makes the user a model: an :class:`~gem_envs.multiagent.llm_user.LLMUser` or its
    settings (``{"model": NAME, "base_url": URL, ...}``). Its replies come from the endpoint, so a
    server that fails after its retries raises :class:`~gem_core.endpoint.EndpointError` from
    ``reset`` or ``step`` (in a vector environment, a fault that ends the episode).
    """

    def __init__(self, task_index: int | None = None, max_turns: int = 30,
                 user_policy: Callable[[str], str] | None = None,
                 user: LLMUser | Mapping[str, Any] | None = None):
        super().__init__()
        self.possible_agents = ["assistant", "user"]
        self.tasks = load_tasks()
        if task_index is not None and not 0 <= task_index < len(self.tasks):
            raise GemError(f"task_index must be within 0-{len(self.tasks) - 1}, not {task_index}.")
        if user is not None and user_policy is not None:
            raise GemError("Give the user as user= (a model) or user_policy= (a callable), not both.")
        self.task_index, self.max_turns, self.user_policy = task_index, max_turns, user_policy
        self.llm_user = LLMUser.of(user) if user is not None else None
        if self.llm_user is not None:
            self.blocking = True  # type: ignore[misc]  # each user reply waits on the server
        self.task: dict[str, Any] = {}
        self.store = Store()
        self.replies: list[str] = []  # the assistant's messages to the user
        self.dialogue: list[tuple[str, str]] = []  # (speaker, message) between assistant and user, in order
        self.for_assistant = self.for_user = ""
        self.assistant_turns = self.unanswered = 0
        self._next = "assistant"

    def start(self) -> None:
        index = self.task_index if self.task_index is not None else self.rng.randrange(len(self.tasks))
        self.task = self.tasks[index]
        self.store = Store()
        self.replies, self.assistant_turns, self.unanswered = [], 0, 0
        self.for_user = GREETING
        self.dialogue = [("assistant", GREETING)]
        opening = self.user_message(self.observe("user"))
        self.dialogue.append(("user", opening))
        self.for_assistant = f"{POLICY}\n{TOOLS}\n\nUser: {opening}"
        self._next = "assistant"

    @property
    def user(self) -> dict[str, Any]:
        return self.store.data["users"][self.task["user_id"]]

    def observe(self, agent: str) -> str:
        if agent == "assistant":
            return self.for_assistant
        return (f"You are {self.user['name']} (email {self.user['email']}, zip {self.user['zip']}), talking to a "
                f"store's assistant. Your request: {self.task['request']} Say {STOP} when it is done.\n"
                f"Assistant: {self.for_user}")

    def _process_actions(self, actions: dict[str, str]) -> AgentDicts:
        rewards = {agent: 0.0 for agent in self.agents}
        infos: dict[str, dict[str, Any]] = {agent: {} for agent in self.agents}
        ended = truncated = False
        if "assistant" in actions:
            self.assistant_turns += 1
            action = actions["assistant"]
            call = tool_call(action)
            if call is None:
                self.replies.append(action)
                self.dialogue.append(("assistant", action))
                self.for_user, self._next = action, "user"
            else:
                result = call if isinstance(call, str) else self.store.call(*call)
                infos["assistant"]["tool_error"] = result.startswith("Error")
                self.for_assistant, self._next = f"Tool result: {result}", "assistant"
            truncated = self.assistant_turns >= self.max_turns
        else:
            message = str(actions["user"])
            self.dialogue.append(("user", message))
            self.store.confirmed = bool(re.search(r"\byes\b", message.lower()))
            ended = STOP in message
            self.for_assistant, self._next = f"User: {message}", "assistant"
        if ended or truncated:
            reward = self.grade()
            for agent in self.agents:
                rewards[agent] = reward
                infos[agent]["outcome"] = "win" if reward > 0 else "loss"
        flags = {agent: ended for agent in self.agents}
        cut = {agent: truncated and not ended for agent in self.agents}
        return {a: self.observe(a) for a in self.agents}, rewards, flags, cut, infos

    def _advance(self) -> None:
        self.agent_selector.select(self._next)  # type: ignore[union-attr]

    def grade(self) -> float:
        """1.0 when the store matches the ground truth's and every required amount was said."""
        said = " ".join(self.replies)
        same_store = self.store.data == replayed(self.task["actions"])
        return float(same_store and all(amount in said for amount in self.task["outputs"]))

    # ---- the user ----

    def scripted_action(self, agent: str) -> str:
        if agent != "user":
            raise GemError("Only the user is scripted; the assistant is the agent being trained.")
        return self.user_message(self.observe("user"))

    def user_message(self, observation: str) -> str:
        if self.llm_user is not None:
            seed = self.bot_rng.randrange(2**31)  # replays with the episode seed, where the server samples
            return self.llm_user.reply(goal(self.user, self.task, STOP), self.dialogue, seed=seed)
        if self.user_policy is not None:
            return str(self.user_policy(observation))
        return self.scripted_reply(self.for_user)

    def scripted_reply(self, said: str) -> str:
        """What the scripted user answers to the assistant's message ``said``."""
        text, knows = said.lower(), self.task["knows"]
        first, last = self.user["name"].split(" ", 1)
        if not self.replies:
            return self.task["request"]
        answers = []
        if "email" in text:
            answers.append(f"My email is {self.user['email']}.")
        elif "zip" in text or "name" in text:
            answers.append(f"I'm {first} {last}, zip code {self.user['zip']}.")
        if "order" in text and ("id" in text or "number" in text or "which" in text) and "order_id" in knows:
            answers.append(f"The order is {knows['order_id']}.")
        if ("reason" in text or "why" in text) and "reason" in knows:
            answers.append(f"The reason: {knows['reason']}.")
        if "address" in text and "address" in knows:
            answers.append(f"The new address is {knows['address']}.")
        if "item" in text and "item_ids" in knows:
            answers.append(f"The item ids are {', '.join(knows['item_ids'])}.")
        if ("variant" in text or "option" in text) and "new_variant_ids" in knows:
            answers.append(f"I want variant {', '.join(knows['new_variant_ids'])}.")
        if any(word in text for word in CONFIRM_WORDS):
            answers.append("Yes, please go ahead.")
        if answers:
            self.unanswered = 0
            return " ".join(answers)
        if any(word in text for word in DONE_WORDS):
            return f"Thank you, that is all. {STOP}"
        self.unanswered += 1
        if self.unanswered >= 2:
            return f"I don't think you can help me. {STOP}"
        return self.task["request"]

    def random_action(self, agent: str) -> str:
        if agent == "user":
            return self.scripted_action("user")
        if self.action_rng.random() < 0.5:
            return "Could you give me your email address?"
        email = self.action_rng.choice(list(self.store.data["users"].values()))["email"]
        return f'<tool_call>{{"name": "find_user_id_by_email", "arguments": {{"email": "{email}"}}}}</tool_call>'

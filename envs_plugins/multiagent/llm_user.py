"""The customer of the customer-service task played by a model, as TAU-bench simulates its users.

The model behind an OpenAI-compatible endpoint is told who the customer is and the task's hidden
goal (the request and the details the customer knows: order, reason, items, variants, address),
and how a customer talks: one short message at a time, details only when asked, nothing made up,
"yes" to confirm the change it asked for, and ``###STOP###`` once the request is done or refused.
It sees the conversation from the customer's side: the store assistant's messages as the other
party's (role ``user``), its own earlier messages as its own (role ``assistant``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from gem_core.endpoint import ChatEndpoint
from gem_core.errors import GemError

#: A conversation as the environment keeps it: ``(speaker, text)``, speaker ``"assistant"`` (the
#: store's) or ``"user"`` (the customer).
Dialogue = Sequence[tuple[str, str]]

DETAILS = {
    "order_id": "the order is {}",
    "reason": 'your reason is "{}"',
    "item_ids": "the item ids are {}",
    "new_variant_ids": "the variant ids you want instead are {}",
    "address": "your new address is {}",
}


def goal(customer: Mapping[str, Any], task: Mapping[str, Any], stop: str) -> str:
    """The customer's instructions: who they are, their hidden goal, and how to talk."""
    known = "; ".join(DETAILS[key].format(", ".join(value) if isinstance(value, list) else value)
                      for key, value in task["knows"].items() if key in DETAILS)
    return (
        f"You are {customer['name']}, a customer of an online store, chatting with the store's customer-service "
        f"assistant. Your email is {customer['email']} and your zip code is {customer['zip']}.\n"
        f"What you want: {task['request']}\n"
        + (f"What you know: {known}.\n" if known else "")
        + "How to talk: write only your next message to the assistant, one or two short sentences in the first "
        "person. Do not tell everything at once: give a detail when the assistant asks for it. Never make up a "
        "detail you were not given. When the assistant asks you to confirm the change you asked for, say yes. "
        f"Once your request is done, or the assistant cannot do it, end your message with {stop}."
    )


class LLMUser:
    """A simulated customer: ``model`` at ``base_url`` (key in ``$api_key_env``), answering with
    ``temperature`` and at most ``max_tokens`` tokens, each request within ``timeout`` seconds and
    ``max_retries`` retries (see :class:`~gem_core.endpoint.ChatEndpoint`). A request that still
    fails raises :class:`~gem_core.endpoint.EndpointError`."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 temperature: float = 0.0, max_tokens: int = 256, timeout: float = 60.0, max_retries: int = 2):
        self.endpoint = ChatEndpoint(model, base_url=base_url, api_key_env=api_key_env, temperature=temperature,
                                     max_tokens=max_tokens, timeout=timeout, max_retries=max_retries)

    @classmethod
    def of(cls, user: LLMUser | Mapping[str, Any]) -> LLMUser:
        """``user`` itself, or an LLM user made from its settings (``{"model": ..., "base_url": ...}``)."""
        if isinstance(user, LLMUser):
            return user
        if not isinstance(user, Mapping):
            raise GemError(f"user= takes an LLMUser or its settings as a mapping ({{model: NAME, base_url: URL}}), "
                           f"got {user!r}.")
        accepted = [name for name in inspect.signature(cls).parameters]
        unknown = sorted(set(user) - set(accepted))
        if unknown or "model" not in user:
            problem = f"does not take {', '.join(map(repr, unknown))}" if unknown else "needs model"
            raise GemError(f"The LLM user's settings {problem}; it takes: {', '.join(accepted)}.")
        return cls(**user)

    @staticmethod
    def messages(instructions: str, dialogue: Dialogue) -> list[dict[str, str]]:
        """The chat the model answers: its instructions, then the dialogue from the customer's side."""
        roles = {"assistant": "user", "user": "assistant"}
        return [{"role": "system", "content": instructions},
                *({"role": roles[speaker], "content": text} for speaker, text in dialogue)]

    def reply(self, instructions: str, dialogue: Dialogue, *, seed: int | None = None) -> str:
        """The customer's next message (``seed`` goes to servers that sample with one)."""
        options = {} if seed is None else {"seed": seed}
        return self.endpoint.complete(self.messages(instructions, dialogue), **options).strip()

    def __repr__(self) -> str:
        return f"LLMUser({self.endpoint!r})"

"""The retail store behind the customer-service task: users, products and orders (a JSON file that
ships with the pack), the tools an assistant acts on it with, and the policy they enforce.

Every tool takes keyword arguments and returns a text result; a call the policy forbids or whose
arguments are wrong returns ``"Error: ..."`` and changes nothing. Amounts are written with two
decimals. The policy (:data:`POLICY`) as the tools enforce it:

* a user is authenticated by ``find_user_id_by_email`` or ``find_user_id_by_name_zip``; tools
  that change something act only on the authenticated user's account and orders;
* a change needs the user's explicit confirmation: their last message says "yes";
* only pending orders can be cancelled (reason ``no longer needed`` or ``ordered by mistake``) or
  sent to a new address; only delivered orders can have items returned or exchanged, and an
  exchange is for an available variant of the same product.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

STORE_FILE = Path(__file__).with_name("customer_service_store.json")
CANCEL_REASONS = ("no longer needed", "ordered by mistake")

POLICY = """You are a customer-service assistant of an online store. Policy:
- Before acting on an account or order, authenticate the user: find their user id by email, or by name and zip code.
- Act only on the authenticated user's account and orders.
- Before any change (cancel, return, exchange, address), tell the user what you will do and get an explicit "yes".
- Only pending orders can be cancelled, with reason "no longer needed" or "ordered by mistake"; refuse other reasons.
- Only pending orders can get a new shipping address. Only delivered orders can have items returned or exchanged.
- An exchange must be for an available variant of the same product; the price difference is paid or refunded.
- Tell the user the amount refunded or paid.
To call a tool write <tool_call>{"name": TOOL, "arguments": {...}}</tool_call>; any other reply is a message to the user."""


@functools.lru_cache(maxsize=1)
def _store_text() -> str:
    return STORE_FILE.read_text(encoding="utf-8")


def fresh_store() -> dict[str, Any]:
    """A new copy of the store as shipped."""
    return json.loads(_store_text())


def money(amount: float) -> str:
    return f"{amount:.2f}"


class ToolError(Exception):
    """A tool call the policy or the store refuses; its message is shown to the assistant."""


class Store:
    """The store and its tools; :attr:`user_id` is the authenticated user, :attr:`confirmed` whether
    the user's last message confirmed a change."""

    def __init__(self, data: dict[str, Any] | None = None):
        self.data = data if data is not None else fresh_store()
        self.user_id: str | None = None
        self.confirmed = False
        self.tools: dict[str, Callable[..., str]] = {
            name: getattr(self, name) for name in (
                "find_user_id_by_email", "find_user_id_by_name_zip", "get_user_details", "get_order_details",
                "get_product_details", "cancel_pending_order", "modify_pending_order_address",
                "return_delivered_order_items", "exchange_delivered_order_items", "modify_user_address",
                "transfer_to_human_agents")}

    def call(self, name: str, arguments: Any) -> str:
        """Run tool ``name``; a refused or malformed call comes back as ``"Error: ..."``."""
        tool = self.tools.get(name)
        if tool is None:
            return f"Error: unknown tool {name!r}; the tools are {', '.join(self.tools)}."
        if not isinstance(arguments, dict):
            return "Error: arguments must be a JSON object."
        try:
            return tool(**arguments)
        except TypeError as error:
            return f"Error: wrong arguments for {name}: {error}."
        except ToolError as error:
            return f"Error: {error}"

    # ---- look-ups (no authentication needed to find a user; details need it) ----

    def find_user_id_by_email(self, email: str) -> str:
        for user_id, user in self.data["users"].items():
            if user["email"].lower() == str(email).strip().lower():
                self.user_id = user_id
                return user_id
        raise ToolError("no user with that email.")

    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        name = f"{first_name} {last_name}".strip().lower()
        for user_id, user in self.data["users"].items():
            if user["name"].lower() == name and user["zip"] == str(zip).strip():
                self.user_id = user_id
                return user_id
        raise ToolError("no user with that name and zip code.")

    def get_user_details(self, user_id: str) -> str:
        return json.dumps(self._own_user(user_id))

    def get_order_details(self, order_id: str) -> str:
        return json.dumps({"order_id": order_id, **self._own_order(order_id)})

    def get_product_details(self, product_id: str) -> str:
        product = self.data["products"].get(product_id)
        if product is None:
            raise ToolError(f"no product {product_id!r}.")
        return json.dumps({"product_id": product_id, **product})

    # ---- changes ----

    def cancel_pending_order(self, order_id: str, reason: str) -> str:
        order = self._changeable(order_id, "pending")
        if reason not in CANCEL_REASONS:
            raise ToolError(f"the reason must be one of {', '.join(map(repr, CANCEL_REASONS))}.")
        order["status"] = "cancelled"
        refund = sum(item["price"] for item in order["items"])
        order["refunds"].append(round(refund, 2))
        return f"Order {order_id} cancelled; {money(refund)} refunded."

    def modify_pending_order_address(self, order_id: str, address: str) -> str:
        order = self._changeable(order_id, "pending")
        order["address"] = str(address)
        return f"Order {order_id} will ship to {address}."

    def return_delivered_order_items(self, order_id: str, item_ids: list[str]) -> str:
        order = self._changeable(order_id, "delivered")
        items = self._items(order, item_ids)
        for item in items:
            item["status"] = "returned"
        refund = sum(item["price"] for item in items)
        order["refunds"].append(round(refund, 2))
        return f"Return of {', '.join(item_ids)} accepted; {money(refund)} refunded."

    def exchange_delivered_order_items(self, order_id: str, item_ids: list[str], new_variant_ids: list[str]) -> str:
        order = self._changeable(order_id, "delivered")
        items = self._items(order, item_ids)
        if not isinstance(new_variant_ids, list) or len(new_variant_ids) != len(items):
            raise ToolError("give one new variant id per item exchanged.")
        difference = 0.0
        for item, variant_id in zip(items, new_variant_ids):
            variant = self.data["products"][item["product_id"]]["variants"].get(variant_id)
            if variant is None or not variant["available"]:
                raise ToolError(f"{variant_id!r} is not an available variant of the same product as {item['item_id']}.")
            difference += variant["price"] - item["price"]
        for item, variant_id in zip(items, new_variant_ids):
            variant = self.data["products"][item["product_id"]]["variants"][variant_id]
            item.update(variant_id=variant_id, option=variant["option"], price=variant["price"], status="exchanged")
        verb = "paid" if difference >= 0 else "refunded"
        return f"Exchange accepted; {money(abs(difference))} {verb}."

    def modify_user_address(self, user_id: str, address: str) -> str:
        user = self._own_user(user_id)
        self._require_confirmation()
        user["address"] = str(address)
        return f"Address of {user_id} updated."

    def transfer_to_human_agents(self, summary: str) -> str:
        return "Transferred to a human agent."

    # ---- policy checks ----

    def _own_user(self, user_id: str) -> dict[str, Any]:
        if self.user_id is None:
            raise ToolError("authenticate the user first (find_user_id_by_email or find_user_id_by_name_zip).")
        if user_id != self.user_id:
            raise ToolError("you may only act on the authenticated user's account.")
        return self.data["users"][user_id]

    def _own_order(self, order_id: str) -> dict[str, Any]:
        if self.user_id is None:
            raise ToolError("authenticate the user first (find_user_id_by_email or find_user_id_by_name_zip).")
        order = self.data["orders"].get(order_id)
        if order is None or order["user_id"] != self.user_id:
            raise ToolError(f"the authenticated user has no order {order_id!r}.")
        return order

    def _changeable(self, order_id: str, status: str) -> dict[str, Any]:
        order = self._own_order(order_id)
        if order["status"] != status:
            raise ToolError(f"order {order_id} is {order['status']}; only {status} orders allow this.")
        self._require_confirmation()
        return order

    def _require_confirmation(self) -> None:
        if not self.confirmed:
            raise ToolError("the user has not confirmed this change: ask them and wait for a yes.")

    def _items(self, order: dict[str, Any], item_ids: list[str]) -> list[dict[str, Any]]:
        if not isinstance(item_ids, list) or not item_ids:
            raise ToolError("item_ids must be a non-empty list.")
        by_id = {item["item_id"]: item for item in order["items"]}
        missing = [i for i in item_ids if i not in by_id or by_id[i]["status"] != "ordered"]
        if missing:
            raise ToolError(f"no item(s) {', '.join(map(str, missing))} to change in this order.")
        return [by_id[i] for i in item_ids]


def replayed(actions: list[dict[str, Any]]) -> dict[str, Any]:
    """The store after the ground-truth ``actions`` (authenticated and confirmed)."""
    store = Store()
    for action in actions:
        store.user_id, store.confirmed = _owner(store, action["arguments"]), True
        result = store.call(action["name"], copy.deepcopy(action["arguments"]))
        if result.startswith("Error"):
            raise ValueError(f"A task's ground truth fails: {action} -> {result}")
    return store.data


def _owner(store: Store, arguments: dict[str, Any]) -> str | None:
    if "user_id" in arguments:
        return arguments["user_id"]
    order = store.data["orders"].get(arguments.get("order_id"))
    return order["user_id"] if order else None

"""OpenAI's Conversations API, the request side (docs/openai.md, "Conversations"): the
bodies of `POST /v1/conversations`, `POST /v1/conversations/{id}` and
`POST /v1/conversations/{id}/items`, checked before anything is stored; the ids of a
conversation and of its items; and `conversation` on `POST /v1/responses`. Pure Python.

A conversation lives in a Durable Object of its own (chat.conversation), whose id it
carries: `conv_` and the object's 64 hex digits, which nobody can guess. Its items are
numbered in the order they were added, and each id names the conversation and the number:
`<kind>_<the conversation's 64 hex digits>_c<n>` (`msg`, `fc`, `fco`, `rs`), so an item is
found with no look at any other object. The shapes follow the `openai` package 3.57.0
(`types/conversations/`, read 2026-12-03).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chat.api.responses import checked_item, checked_metadata
from chat.api.stored_items import ITEM_PREFIXES, listed
from chat.config import Config
from chat.web.errors import ApiError, invalid_request

CONVERSATION_PREFIX = "conv_"
# OpenAI's: "up to 20 items at a time" (conversation_create_params.py, item_create_params.py).
MAX_ITEMS_PER_REQUEST = 20
# What one conversation may hold: a conversation is sent whole with each response of it, so
# one past a model's limits (MAX_MESSAGES) can be listed and no longer continued.
MAX_CONVERSATION_ITEMS = 4096
_CONVERSATION_ID = re.compile(r"conv_([0-9a-f]{64})")
_ITEM_ID = re.compile(r"(msg|fc|fco|rs)_([0-9a-f]{64})_c(0|[1-9][0-9]{0,15})")


def conversation_key(value: Any) -> str | None:
    """The Durable Object id a conversation's id names, or None for anything else."""
    found = _CONVERSATION_ID.fullmatch(value) if isinstance(value, str) else None
    return None if found is None else found.group(1)


def conversation_not_found(value: Any) -> ApiError:
    shown = value if isinstance(value, str) and len(value) <= 80 and value.isascii() and value.isprintable() else "…"
    return ApiError("conversation_not_found", f"Conversation with id '{shown}' not found.")


def item_id(item: Mapping[str, Any], key: str, number: int) -> str:
    return f"{ITEM_PREFIXES.get(item.get('type', 'message'), 'msg')}_{key}_c{number}"


def item_number(value: Any, key: str) -> int | None:
    """The number of the item of conversation `key` that `value` names, or None (its kind
    is checked against the item's: `item_kind`)."""
    found = _ITEM_ID.fullmatch(value) if isinstance(value, str) else None
    return int(found.group(3)) if found is not None and found.group(2) == key else None


def item_kind(value: str) -> str:
    """The kind an item id says its item is (`msg`, `fc`, `fco`, `rs`)."""
    return value.partition("_")[0]


def is_of_kind(item: Mapping[str, Any], kind: str) -> bool:
    return ITEM_PREFIXES.get(item.get("type", "message")) == kind


def listed_item(item: Mapping[str, Any], key: str, number: int) -> dict[str, Any]:
    """A kept item in the shape OpenAI lists a conversation's."""
    return listed(item, item_id(item, key, number))


def conversation_object(key: str, created_at: int, metadata: Mapping[str, str]) -> dict[str, Any]:
    return {"id": CONVERSATION_PREFIX + key, "object": "conversation", "created_at": created_at, "metadata": dict(metadata)}


@dataclass(frozen=True, kw_only=True)
class NewConversation:
    items: list[dict[str, Any]]
    metadata: dict[str, str]


def checked_conversation(payload: Any, config: Config) -> NewConversation:
    """`POST /v1/conversations`: its items and metadata, both optional. Raises ApiError 400 naming the field."""
    if not isinstance(payload, dict):
        raise invalid_request("The request body must be a JSON object.")
    items = checked_items(payload.get("items"), config, required=False)
    return NewConversation(items=items, metadata=checked_metadata(payload.get("metadata")) or {})


def checked_update(payload: Any) -> dict[str, str]:
    """`POST /v1/conversations/{id}`: the new metadata (required, as OpenAI's; null clears it)."""
    if not isinstance(payload, dict) or "metadata" not in payload:
        raise invalid_request("metadata is required: the conversation's new metadata, or null.", param="metadata")
    return checked_metadata(payload["metadata"]) or {}


def checked_items(value: Any, config: Config, *, required: bool = True) -> list[dict[str, Any]]:
    """`items`: 1 to MAX_ITEMS_PER_REQUEST input items (0 when not `required`), each checked as
    an input item on its own, as kept. Raises ApiError 400 naming the item."""
    if value is None and not required:
        return []
    if not isinstance(value, list) or (required and not value) or len(value) > MAX_ITEMS_PER_REQUEST:
        raise invalid_request(f"items must be a list of {'1' if required else '0'} to {MAX_ITEMS_PER_REQUEST} items.", param="items")
    kept = [checked_item(item, f"items[{index}]", config) for index, item in enumerate(value)]
    return [item for item in kept if item is not None]


@dataclass(frozen=True, kw_only=True)
class ConversationTurn:
    """A response of conversation `key`: its input kept from index `own_from` on (what
    came before is the conversation's) is appended to it with its output when it ends."""

    key: str
    own_from: int


def conversation_param(value: Any) -> str:
    """`conversation` of a Responses request, a conversation's id or `{"id": ...}`: the
    key of its object. Raises ApiError: 400 for another shape, 404 for an id that names none."""
    if isinstance(value, dict):
        value = value.get("id")
        if not isinstance(value, str):
            raise invalid_request('conversation must be a conversation\'s id, or {"id": <its id>}.', param="conversation")
    if not isinstance(value, str):
        raise invalid_request('conversation must be a conversation\'s id, or {"id": <its id>}.', param="conversation")
    key = conversation_key(value)
    if key is None:
        raise conversation_not_found(value)
    return key

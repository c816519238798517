"""Conversations, the Worker's side: each is its own Durable Object (durable_object),
reached through the CONVERSATIONS binding by RPC, every call with its owner (the digest of
the bearer token, else ""). The Worker checks what it sends (chat.api.conversations)."""

from __future__ import annotations

import json
from typing import Any

from chat.api.conversations import NewConversation, conversation_key, conversation_not_found
from chat.api.stored_items import PageQuery
from chat.platform.ffi import JsException
from chat.resumable.protocol import received
from sse import portable_json


async def create(env: Any, new: NewConversation, owner: str, *, created_at: int) -> str:
    """A new conversation's object (JSON)."""
    namespace = env.CONVERSATIONS
    order = portable_json({"created_at": created_at, "metadata": new.metadata, "items": new.items})
    answer = await received(namespace.get(namespace.newUniqueId()).create(owner, order))
    return str(await answer.text())


async def call(env: Any, conversation_id: str, method: str, owner: str, *args: Any) -> str | None:
    """One of the object's calls: its JSON answer, None for a 204. Raises ApiError,
    404 conversation_not_found for an id that names none, or not this owner's."""
    answer = await received(getattr(stub(env, conversation_id), method)(owner, *args))
    return None if answer.status == 204 else str(await answer.text())


async def items_page(env: Any, conversation_id: str, query: PageQuery, owner: str) -> str:
    listed = await call(env, conversation_id, "list_items", owner, json.dumps(query.as_order()))
    assert listed is not None
    return listed


def stub(env: Any, conversation_id: str, *, key: str | None = None) -> Any:
    """The object of `conversation_id` (or of the object id `key`, checked already)."""
    namespace = env.CONVERSATIONS
    key = key or conversation_key(conversation_id)
    if key is not None:
        try:
            return namespace.get(namespace.idFromString(key))
        except JsException:
            pass  # well-formed, but not an id of this namespace
    raise conversation_not_found(conversation_id)

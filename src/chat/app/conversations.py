"""The handlers of /v1/conversations (chat.conversation): thin, as every handler is; the
checks are chat.api.conversations', the storage the conversation's own object."""

from __future__ import annotations

import time

from chat.api.conversations import checked_conversation, checked_items, checked_update, conversation_key, item_kind, item_number
from chat.api.stored_items import PageQuery
from chat.app.callers import owner_of, read_json
from chat.conversation import client as conversations
from chat.platform.edge import JsEdge
from chat.web import http
from chat.web.errors import ApiError
from chat.web.exchange import Exchange, Reply
from chat.web.routes import Admitted
from sse import portable_json


async def openai_conversations(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    """POST: a new conversation, with its first items."""
    new = await read_json(edge, admitted.config, lambda payload: checked_conversation(payload, admitted.config))
    created = await conversations.create(edge.env, new, owner_of(admitted), created_at=int(time.time()))
    return exchange.reply(created, 200, {"content-type": http.JSON_TYPE})


async def openai_conversation(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    """GET: the conversation; POST: its new metadata; DELETE: remove it."""
    method, owner, conversation_id = exchange.request.method, owner_of(admitted), admitted.key or ""
    if method == "POST":
        metadata = await read_json(edge, admitted.config, checked_update)
        answer = await conversations.call(edge.env, conversation_id, "update", owner, portable_json(metadata))
    else:
        answer = await conversations.call(edge.env, conversation_id, "remove" if method == "DELETE" else "describe", owner)
    return exchange.reply(answer, 200, {"content-type": http.JSON_TYPE})


async def openai_conversation_items(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    """GET: a page of the conversation's items; POST: more of them."""
    owner, conversation_id = owner_of(admitted), admitted.key or ""
    if exchange.request.method == "POST":
        items = await read_json(edge, admitted.config, lambda payload: checked_items(
            payload.get("items") if isinstance(payload, dict) else None, admitted.config))
        answer = await conversations.call(edge.env, conversation_id, "add_items", owner, portable_json(items))
    else:
        answer = await conversations.items_page(edge.env, conversation_id, PageQuery.of(http.query_of(exchange.request.url)), owner)
    return exchange.reply(answer, 200, {"content-type": http.JSON_TYPE})


async def openai_conversation_item(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    """GET: one item of the conversation; DELETE: remove it (OpenAI answers the conversation)."""
    conversation_id, item = admitted.key or "", admitted.item or ""
    number = item_number(item, conversation_key(conversation_id) or "")
    if number is None:
        conversations.stub(edge.env, conversation_id)  # a conversation that is none is its 404 first
        raise ApiError("item_not_found", "Item not found in this conversation.")
    method = "delete_item" if exchange.request.method == "DELETE" else "get_item"
    answer = await conversations.call(edge.env, conversation_id, method, owner_of(admitted), number, item_kind(item))
    return exchange.reply(answer, 200, {"content-type": http.JSON_TYPE})

"""Resumable answers, the Worker's side: a turn is handed to its Durable Object
(durable_object), and readers' requests are passed on to it. The Worker keeps doing
what it does for every route (CORS, auth, limits, validation, the request id); the object
only ever hears from the Worker, through the binding, by the RPC calls of `protocol`."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from chat.api.validation import is_chat_id
from chat.model.call import ModelCall
from chat.platform.ffi import JsException
from chat.resumable.formats import ReaderFormat
from chat.resumable.protocol import Failure, ReadOrder, StartOrder
from chat.turn import ChatTurn
from chat.web import http
from chat.web.errors import ApiError
from sse import parse_event_id


async def start(env: Any, turn: ChatTurn, call: ModelCall, *, request_id: str, format: ReaderFormat) -> tuple[Any, dict[str, str]]:
    """Starts the answer in a new object (or the chat's own, for the AI SDK); returns the
    first reader's body and headers. Raises the start's ApiError (429, 502, 504)."""
    namespace = env.CHAT_STREAMS
    if turn.chat_id is None:
        object_id = namespace.newUniqueId()
        stream_id: str | None = str(object_id.toString())
    else:
        object_id = _chat_object(namespace, turn.chat_id)
        stream_id = None
    order = StartOrder(request_id=request_id, format=format, call=call, stream_id=stream_id, message_id=turn.continues_message)
    response = await _received(namespace.get(object_id).begin_answer(order.to_json()))
    return response.body, format.headers


async def read(env: Any, target: tuple[str, str], *, last_event_id: str | None, accept: str | None) -> tuple[Any, dict[str, str]] | None:
    """A reader's body and headers from after `last_event_id`; None (204) when a UI chat
    has no answer in progress, or the reader already has all of a finished answer. Raises
    ApiError 400 for a malformed id or an event id this answer never sent, 404 for an
    unknown or expired answer."""
    namespace = env.CHAT_STREAMS
    route, key = target
    if route == "ui-chat-stream":
        if not is_chat_id(key):
            raise ApiError("invalid_stream_id", "The chat id is not one this Worker accepts.")
        # The AI SDK asks for the answer in progress from its start; none is a 204.
        order = ReadOrder(after=0, format=ReaderFormat.UI, active_only=True)
        stub = namespace.get(_chat_object(namespace, key))
    else:
        after = 0
        if last_event_id is not None and last_event_id.strip(" \t"):  # empty: from the start
            try:
                after = parse_event_id(last_event_id)
            except ValueError:
                raise ApiError("invalid_last_event_id") from None
        order = ReadOrder(after=after, format=ReaderFormat.negotiated(accept))
        stub = namespace.get(_object_id(namespace, key))
    response = await _received(stub.read_answer(order.after, order.format.value, order.active_only))
    # 204: the reader has every event of a finished answer (an EventSource stops there).
    return None if response.status == 204 else (response.body, order.format.headers)


async def stop(env: Any, key: str) -> None:
    namespace = env.CHAT_STREAMS
    await _received(namespace.get(_object_id(namespace, key)).stop_answer())


def _chat_object(namespace: Any, chat_id: str) -> Any:
    return namespace.idFromName(f"ui-chat:{chat_id}")


def _object_id(namespace: Any, stream_id: str) -> Any:
    malformed = ApiError("invalid_stream_id")
    if not http.is_stream_id(stream_id):
        raise malformed
    try:
        return namespace.idFromString(stream_id)
    except JsException:
        raise malformed from None  # well-formed, but not an id of this namespace


async def _received(call: Awaitable[Any]) -> Any:
    """The JS Response an RPC call of the object returns; a Failure raised as its ApiError."""
    response = await call
    response = response.js_object if hasattr(response, "js_object") else response
    if response.status in (200, 204):
        return response
    raise Failure.read(str(await response.text()))

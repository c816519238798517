"""Resumable answers, the Worker's side: a turn is handed to its Durable Object
(chat.resumable.durable_object), and readers' requests are passed on to it. The Worker keeps doing
what it does for every route (CORS, auth, limits, validation, the request id); the object
only ever hears from the Worker, through the binding."""

from __future__ import annotations

import json
from typing import Any

import js

from chat.api.validation import ChatTurn, is_chat_id
from chat.model.call import ModelCall
from chat.platform.ffi import JsException, js_object
from chat.web import http
from chat.web.errors import ApiError
from sse import NDJSONEncoder, SSEEncoder, UIMessageStreamEncoder, parse_event_id

OBJECT_ORIGIN = "https://chat-stream"  # any origin: the binding routes by object id


def reader_format(accept: str | None) -> str:
    return "ndjson" if http.prefers_ndjson(accept) else "sse"


def stream_headers(format: str) -> dict[str, str]:
    # The headers of the encoding the object writes the answer in.
    encoders = {"ndjson": NDJSONEncoder, "ui": UIMessageStreamEncoder}
    return encoders.get(format, SSEEncoder)().headers


async def start(env: Any, turn: ChatTurn, call: ModelCall, *, request_id: str, format: str) -> tuple[Any, dict[str, str]]:
    """Starts the answer in a new object (or the chat's own, for the AI SDK); returns the
    first reader's body and headers. Raises the start's ApiError (429, 502, 504)."""
    namespace = env.CHAT_STREAMS
    if turn.chat_id is None:
        object_id = namespace.newUniqueId()
        stream_id: str | None = str(object_id.toString())
    else:
        object_id = namespace.idFromName(f"ui-chat:{turn.chat_id}")
        stream_id = None
    order = {
        "request_id": request_id,
        "kind": "ui" if format == "ui" else "chat",
        "format": format,
        "stream_id": stream_id,
        "message_id": turn.continues_message,
        **call.as_order(),
    }
    response = await _call(namespace, object_id, "POST", "/start", json.dumps(order))
    return response.body, stream_headers(format)


async def read(env: Any, target: tuple[str, str], *, last_event_id: str | None, accept: str | None) -> tuple[Any, dict[str, str]] | None:
    """A reader's body and headers from after `last_event_id`; None (204) when a UI chat
    has no answer in progress, or the reader already has all of a finished answer. Raises
    ApiError 400 for a malformed id or an event id not sent yet, 404 for an unknown or
    expired answer."""
    namespace = env.CHAT_STREAMS
    route, key = target
    if route == "ui-chat-stream":
        if not is_chat_id(key):
            raise ApiError("invalid_stream_id", "The chat id is not one this Worker accepts.")
        # The AI SDK asks for the answer in progress from its start; none is a 204.
        response = await _call(namespace, namespace.idFromName(f"ui-chat:{key}"), "GET", "/events?after=0&format=ui&active=1")
        return None if response.status == 204 else (response.body, stream_headers("ui"))
    after = 0
    if last_event_id is not None and last_event_id.strip(" \t"):  # empty: from the start
        try:
            after = parse_event_id(last_event_id)
        except ValueError:
            raise ApiError("invalid_last_event_id") from None
    format = reader_format(accept)
    response = await _call(namespace, _object_id(namespace, key), "GET", f"/events?after={after}&format={format}")
    # 204: the reader has every event of a finished answer (an EventSource stops there).
    return None if response.status == 204 else (response.body, stream_headers(format))


async def stop(env: Any, key: str) -> None:
    namespace = env.CHAT_STREAMS
    await _call(namespace, _object_id(namespace, key), "DELETE", "/events")


def _object_id(namespace: Any, stream_id: str) -> Any:
    malformed = ApiError("invalid_stream_id")
    if not http.is_stream_id(stream_id):
        raise malformed
    try:
        return namespace.idFromString(stream_id)
    except JsException:
        raise malformed from None  # well-formed, but not an id of this namespace


async def _call(namespace: Any, object_id: Any, method: str, path: str, body: str | None = None) -> Any:
    """The object's JS Response; its JSON error, if any, raised as ApiError."""
    init = js_object({"method": method, "body": body})
    response = (await namespace.get(object_id).fetch(js.Request.new(OBJECT_ORIGIN + path, init))).js_object
    if response.status in (200, 204):
        return response
    failure = json.loads(str(await response.text()))
    # The object's codes are the table's (sse.ERROR_CODES), so are their statuses.
    raise ApiError(str(failure["code"]), headers=dict(failure.get("headers") or {}))

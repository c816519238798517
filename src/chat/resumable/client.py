"""Resumable answers, the Worker's side: a turn is handed to its Durable Object
(durable_object), and readers' requests are passed on to it. The Worker keeps doing
what it does for every route (CORS, auth, limits, validation, the request id); the object
only ever hears from the Worker, through the binding, by the RPC calls of `protocol`."""

from __future__ import annotations

import json
from typing import Any

from chat.api.conversations import CONVERSATION_PREFIX, ConversationTurn, conversation_param
from chat.api.images import MAX_IMAGE_TEXT_BYTES
from chat.api.responses import STORED_ID_PREFIX, ResponsesRequest, continued, kept_items, stored_response_key, with_input_before
from chat.api.stored_items import PageQuery, Reference, by_object, item_not_found, references, resolved
from chat.api.validation import is_chat_id
from chat.config import Config
from chat.conversation import client as conversations
from chat.model.call import ModelCall
from chat.platform.ffi import JsException
from chat.resumable.formats import FinalResponse, ReaderFormat
from chat.resumable.protocol import ReadOrder, ResponseOrder, StartOrder, images_by_reference, received
from chat.turn import ChatTurn
from chat.web import http
from chat.web.errors import ApiError
from sse import MAX_EVENT_ID_DIGITS, parse_event_id, portable_json


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
    response = await received(namespace.get(object_id).begin_answer(order.sent("messages")))
    return response.body, format.headers


async def read(env: Any, target: tuple[str, str], *, last_event_id: str | None, accept: str | None,
               peek: bool = False) -> tuple[Any, dict[str, str]] | None:
    """A reader's body and headers from after `last_event_id`; None (204) when a UI chat
    has no answer in progress, or the reader already has all of a finished answer. `peek`
    (HEAD): no reader, and None for the body of a 200. Raises
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
    response = await received(stub.read_answer(order.after, order.format.value, order.active_only, "", peek))
    # 204: the reader has every event of a finished answer (an EventSource stops there).
    return None if response.status == 204 else (None if peek else response.body, order.format.headers)


async def stop(env: Any, key: str) -> None:
    namespace = env.CHAT_STREAMS
    await received(namespace.get(_object_id(namespace, key)).stop_answer())


# --- stored responses of /v1/responses ----------------------------------------------------------
# A stored response lives in an object of its own, whose id is the response's: `resp_` and
# the object's 64 hex digits, which nobody can guess. `owner` is who may touch it: the
# digest of the bearer token when the Worker requires one, else "" (whoever has the id).


async def start_response(env: Any, request: ResponsesRequest, call: ModelCall, *, request_id: str, created_at: int,
                         owner: str, conversation: ConversationTurn | None = None) -> Any:
    """Starts a stored response in a new object; the JS Response of its first reader
    (the event stream) or, for a background response not streamed, of its head (JSON)."""
    namespace = env.CHAT_STREAMS
    object_id = namespace.newUniqueId()
    stored = ResponseOrder(
        response_id=STORED_ID_PREFIX + str(object_id.toString()), created_at=created_at, echo=dict(request.echo),
        names=dict(request.names), reasoning_summary=request.reasoning_summary, obfuscation=request.obfuscation,
        background=request.background, reader=request.stream or not request.background, owner=owner,
        input=images_by_reference(request.input_items, call.inputs["messages"]),
        conversation=None if conversation is None else conversation.key, own_from=0 if conversation is None else conversation.own_from,
    )
    order = StartOrder(request_id=request_id, format=ReaderFormat.RESPONSES, call=call, response=stored)
    return await received(namespace.get(object_id).begin_answer(order.sent("input")))


async def with_stored_items(env: Any, payload: Any, owner: str, config: Config) -> tuple[Any, ConversationTurn | None, Prepended]:
    """`payload` with what it takes from what is stored put in its `input`: each
    `item_reference`'s item (chat.api.stored_items), then a `previous_response_id`'s
    history (chat.api.responses.continued) or a `conversation`'s items; and the
    conversation the response is a turn of; and how many items came before the client's
    own, from which field (chat.api.responses.named_for_history). Raises ApiError: 404 item_not_found naming
    `input[i]` for an item that is not stored, expired or not this client's; 400
    previous_response_not_found likewise for a previous response, 404
    conversation_not_found for a conversation; 400 for both of these, or for what they
    bring when it takes more than the body may."""
    if not isinstance(payload, dict):
        return payload, None, None
    budget = config.body_limit + MAX_IMAGE_TEXT_BYTES
    items = payload.get("input")
    if isinstance(items, list) and (wanted := references(items, config.max_messages)):
        payload = {**payload, "input": await _referenced(env, items, wanted, owner, budget)}
    previous, conversation = payload.get("previous_response_id"), payload.get("conversation")
    if previous is not None and conversation is not None:
        # OpenAI's 400 for both (its code: mutually_exclusive_parameters).
        raise ApiError("invalid_request", "Mutually exclusive parameters: send previous_response_id or conversation, not both.",
                       param="conversation")
    if conversation is not None:
        key = conversation_param(conversation)
        found = await conversations.call(env, CONVERSATION_PREFIX + key, "turn_items", owner, budget)
        earlier = json.loads(found or "[]")
        turn = ConversationTurn(key=key, own_from=len(kept_items(earlier)))
        return with_input_before(payload, earlier, "conversation"), turn, ("conversation", len(earlier))
    if previous is None:
        return payload, None, None
    stub = _response_object(env, previous, "previous_response_not_found", param="previous_response_id")
    history = json.loads(str(await (await received(stub.response_history(owner))).text()))
    merged = continued(payload, history)
    return merged, None, ("previous_response_id", len(merged.get("input") or []) - len(_own_items(payload.get("input"))))


async def _referenced(env: Any, items: list[Any], wanted: list[Reference], owner: str, budget: int) -> list[Any]:
    """`items` with each reference in `wanted` resolved: one call for each object that keeps
    some, one after the other, each item asked for once however often it is referred to,
    so what they bring is bounded (`budget` characters of JSON, counted as often as each
    is referred to) before the next object is asked."""
    namespace = env.CHAT_STREAMS
    found: dict[int, Any] = {}
    for key, references_there in by_object(wanted).items():
        first = references_there[0]
        missing = item_not_found(items[first.at].get("id"), f"input[{first.at}]")
        places = list(dict.fromkeys(reference.place for reference in references_there))
        try:
            stub = namespace.get(namespace.idFromString(key))
            answer = await received(stub.response_items(owner, json.dumps(places)))
        except JsException:
            raise missing from None  # well-formed, but not an id of this namespace
        except ApiError as error:
            if error.code == "response_not_found":
                raise missing from None
            raise ApiError(error.code, f"input[{first.at}]: {error.message}", param=f"input[{first.at}]") from None
        text = str(await answer.text())
        if len(text) > budget:
            raise _too_large(first)
        by_place = dict(zip(places, json.loads(text), strict=True))
        sizes = {place: len(portable_json(item)) for place, item in by_place.items()}
        for reference in references_there:
            item = by_place[reference.place]
            if item is None:
                raise item_not_found(items[reference.at].get("id"), f"input[{reference.at}]")
            budget -= sizes[reference.place]
            if budget < 0:
                raise _too_large(reference)
            found[reference.at] = item
    return resolved(items, found)


# How many items of the merged input came before the client's own, and from which field.
Prepended = tuple[str, int] | None


def _own_items(items: Any) -> list[Any]:
    return [items] if isinstance(items, str) else items if isinstance(items, list) else []


def _too_large(reference: Reference) -> ApiError:
    return ApiError("invalid_request", f"input[{reference.at}]: the items referenced take more than a request may hold; "
                    "send fewer of them.", param=f"input[{reference.at}]")


async def response_input_items(env: Any, response_id: str, query: PageQuery, owner: str) -> str:
    """A page of a stored response's input items (JSON, OpenAI's list shape)."""
    stub = _response_object(env, response_id, "response_not_found")
    listed = await received(stub.response_input_items(owner, json.dumps(query.as_order())))
    return str(await listed.text())


async def response_call(env: Any, response_id: str, method: str, owner: str) -> Any:
    """One of the object's calls for a stored response (describe, cancel, delete): its JS Response."""
    stub = _response_object(env, response_id, "response_not_found")
    return await received(getattr(stub, method)(owner))


async def read_response(env: Any, response_id: str, starting_after: str | None, owner: str, *, peek: bool = False) -> Any | None:
    """A reader of a stored response's events after sequence number `starting_after`
    (from the first when None); None when there are none left to send, or (`peek`, HEAD)
    when no reader is wanted."""
    after = 0
    if starting_after is not None:
        text = starting_after.strip()
        if not (text.isascii() and text.isdigit() and len(text) < MAX_EVENT_ID_DIGITS):
            raise ApiError("invalid_request", "starting_after must be a sequence number: a whole number, 0 or more.",
                           param="starting_after")
        after = int(text) + 1  # event ids count from 1, sequence numbers from 0
    stub = _response_object(env, response_id, "response_not_found")
    response = await received(stub.read_answer(after, ReaderFormat.RESPONSES.value, False, owner, peek))
    return None if response.status == 204 or peek else response.body


async def read_whole(body: Any) -> tuple[str, int]:
    """A stored response's stream read to its end (FinalResponse): the body and status of
    its Response object, or of the error that ended it."""
    final = FinalResponse()
    reader = body.getReader()
    try:
        while not (chunk := await reader.read()).done:
            final.feed(chunk.value.to_bytes())
    finally:
        reader.releaseLock()
    return final.result()


def _response_object(env: Any, response_id: Any, missing: str, *, param: str | None = None) -> Any:
    namespace = env.CHAT_STREAMS
    key = stored_response_key(response_id)
    if key is not None:
        try:
            return namespace.get(namespace.idFromString(key))
        except JsException:
            pass  # well-formed, but not an id of this namespace
    raise ApiError(missing, param=param)


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

"""The request handlers, and `handle`, the Worker's fetch. Handlers stay thin: routing
and checks come from the pure modules, the model from `upstream`, the streaming from
`relay`, and every JS object from `edge`."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from importlib import import_module
from typing import Any, TypeVar

from chat.api.anthropic import MessagesRequest, count_tokens, validate_count, validate_messages
from chat.api.body import BodyTooLarge
from chat.api.body import split as split_body
from chat.api.conversations import (
    CONVERSATION_PREFIX,
    ConversationTurn,
)
from chat.api.images import MAX_IMAGE_TEXT_BYTES, urls_in
from chat.api.openai import model_list, validate_completion
from chat.api.responses import ResponsesRequest, named_for_history, validate_responses
from chat.api.stored_items import PageQuery
from chat.api.validation import is_json_media_type, parse_json_body, validate_chat, validate_ui_chat
from chat.app.callers import client_of, owner_of
from chat.config import Config, ConfigError
from chat.logs import log, serving
from chat.model import catalog
from chat.model.call import model_call
from chat.output.check import answer_check
from chat.platform.edge import JsEdge
from chat.platform.ffi import alarm
from chat.ratelimit.binding import spend
from chat.resumable import client as resumable
from chat.resumable.formats import ReaderFormat
from chat.stream.collect import collect
from chat.stream.lifecycle import StreamLifecycle
from chat.stream.relay import StreamRelay, load_plumbing
from chat.stream.upstream import Started, start_model_stream
from chat.turn import ChatTurn
from chat.web import http
from chat.web.errors import ApiError
from chat.web.exchange import Exchange, Reply
from chat.web.routes import ROUTES, Admitted, Match, Route, admit, error_renderer, match
from sse import (
    ERROR_CODES,
    SKIPPED_HEADER,
    STREAM_HEADERS,
    AnthropicEncoder,
    Encoder,
    NDJSONEncoder,
    OpenAIChunkEncoder,
    OpenAICompletionEncoder,
    Reframer,
    ResponsesEncoder,
    SSEEncoder,
    UIMessageStreamEncoder,
)

Handler = Callable[[JsEdge, Exchange, Admitted], Awaitable[Reply]]
Checked = TypeVar("Checked")


def _itself(turn: ChatTurn) -> ChatTurn:
    return turn


async def handle(request: Any, env: Any, ctx: Any) -> Any:
    edge = JsEdge(request, env, ctx)
    path = edge.request.path
    found = match(path)
    exchange = Exchange(edge.request, render_error=error_renderer(path, found))
    serving(exchange.request_id)
    try:
        reply = await _serve(edge, exchange, found)
    except ApiError as error:
        reply = exchange.error(error)
    except ConfigError as problem:
        alarm("config_invalid", detail=str(problem))
        reply = exchange.error(ApiError("internal_error"))
    except Exception as exc:  # noqa: BLE001 - never a stack trace to the client
        alarm("internal_error", detail=type(exc).__name__)
        reply = exchange.error(ApiError("internal_error"))
    if exchange.request.method == "HEAD":
        reply = replace(reply, body=None)  # as GET answers, without the body (no stream was made for it)
    return edge.respond(reply)


async def _serve(edge: JsEdge, exchange: Exchange, found: Match | None) -> Reply:
    admitted = admit(exchange, found, edge.config)
    if isinstance(admitted, Reply):
        return admitted
    route = admitted.route
    if route.spends_budget and exchange.request.method == "POST":
        # After auth (only valid tokens reach the limiter), before the body is read.
        await spend(edge.env, client_of(exchange, admitted), request_id=exchange.request_id, route=route.name)
    return await handler_of(route)(edge, exchange, admitted)


async def _read_turn(edge: JsEdge, config: Config, validate: Callable[[Any, Config], Checked], turn_of: Callable[[Checked], ChatTurn],
                     prepare: Callable[[Any], Awaitable[Any]] | None = None) -> Checked:
    """A chat route's body, checked by `validate` (after `prepare`, which may add to it what
    the Worker keeps: a stored response's history). Its images' data URLs are set apart
    before the rest is decoded (chat.api.body) and may take MAX_IMAGE_TEXT_BYTES beyond
    the body limit (Config.body_limit). The rest is held to that limit while it is cut, again before the
    turn is checked with every data URL that is not where an image is read counted in, and
    once more after, with every one the route did not read as an image."""
    if not is_json_media_type(edge.request.header("content-type")):
        raise ApiError("unsupported_media_type")
    limit = config.body_limit
    data = await edge.read_body(limit + MAX_IMAGE_TEXT_BYTES)
    size = len(data)
    too_large = ApiError("payload_too_large", f"The request body is larger than {limit} bytes, "
                         "besides the data URLs of its images.")
    try:
        body = split_body(data, limit)
    except BodyTooLarge:
        raise too_large from None
    del data  # megabytes, with images: each data URL is now its own text
    payload, at_images = body.restored(parse_json_body(body.rest))
    if size - at_images - body.escapes > limit:
        raise too_large
    if prepare is not None:
        payload = await prepare(payload)
    checked = validate(payload, config)
    if body.beside_images(size, urls_in(turn_of(checked).messages)) > limit:
        raise too_large
    return checked


async def chat(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    config = admitted.config
    turn = await _read_turn(edge, config, validate_chat, _itself)
    if turn.resumable:
        return await _chat_resumable(edge, exchange, admitted, turn, ReaderFormat.negotiated(exchange.request.header("accept")))
    encoder = NDJSONEncoder() if http.prefers_ndjson(exchange.request.header("accept")) else SSEEncoder()
    return await _stream(edge, exchange, admitted, turn, encoder)


async def ui_chat(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    config = admitted.config
    turn = await _read_turn(edge, config, validate_ui_chat, _itself)
    if turn.resumable:
        return await _chat_resumable(edge, exchange, admitted, turn, ReaderFormat.UI)
    return await _stream(edge, exchange, admitted, turn, UIMessageStreamEncoder(message_id=turn.continues_message))


async def raw_chat(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    config = admitted.config
    turn = await _read_turn(edge, config, validate_chat, _itself)
    if turn.resumable:
        raise ApiError("invalid_request", "resumable: /api/chat/raw passes the model's stream through; use /api/chat.", param="resumable")
    started = await _start_model(edge, exchange, admitted, turn)
    log("chat_stream_started", **_log_fields(exchange, "raw", started))
    # Untouched: workerd pipes the model's bytes to the client natively. If the model stream
    # fails mid-way the client's body is cut short and workerd's HTTP server logs its own
    # "Uncaught exception: ... disconnected prematurely" (no provider text). Piping through
    # JS to catch that would still end in an errored body (the same line), or in a clean
    # close that a pass-through client could not tell from a finished answer.
    return exchange.reply(started.stream, 200, {"content-type": http.SSE_TYPE, **STREAM_HEADERS})


async def _chat_resumable(edge: JsEdge, exchange: Exchange, admitted: Admitted, turn: ChatTurn, format: ReaderFormat) -> Reply:
    call = model_call(turn, admitted.config, request_id=exchange.request_id, route=admitted.route.name, client=client_of(exchange, admitted).value)
    body, headers = await resumable.start(edge.env, turn, call, request_id=exchange.request_id, format=format)
    return exchange.reply(body, 200, headers)


async def stream_reader(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    """GET: a reader of a resumable answer (204: a UI chat with none in progress); HEAD:
    the same status and headers, and no reader; DELETE: stop it."""
    request = exchange.request
    target = (admitted.route.name, admitted.key or "")
    if request.method == "DELETE":
        await resumable.stop(edge.env, target[1])
        return exchange.reply(None, 204)
    found = await resumable.read(edge.env, target, last_event_id=request.header("last-event-id"), accept=request.header("accept"),
                                 peek=request.method == "HEAD")
    if found is None:
        return exchange.reply(None, 204)
    body, headers = found
    return exchange.reply(body, 200, headers)


async def openai_chat(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    config = admitted.config
    request = await _read_turn(edge, config, validate_completion, lambda request: request.turn)
    created = int(time.time())
    max_tokens = request.turn.max_tokens
    if request.stream:
        encoder: Encoder = OpenAIChunkEncoder(created=created, max_tokens=max_tokens, include_usage=request.include_usage)
        padding = config.padding if request.obfuscation else 0
        return await _stream(edge, exchange, admitted, request.turn, encoder, padding=padding)
    return await _collected(edge, exchange, admitted, request.turn, OpenAICompletionEncoder(created=created, max_tokens=max_tokens))


async def openai_responses(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    config = admitted.config
    owner = owner_of(admitted)
    turns: list[ConversationTurn] = []
    prepended: list[tuple[str, int]] = []

    async def with_stored_items(payload: Any) -> Any:
        merged, turn, before = await resumable.with_stored_items(edge.env, payload, owner, config)
        turns.extend([turn] if turn is not None else [])
        prepended.extend([before] if before is not None else [])
        return merged

    def checked(payload: Any, config: Config) -> ResponsesRequest:
        try:
            return validate_responses(payload, config)
        except ApiError as error:
            raise named_for_history(error, *prepended[0]) if prepended else error from None

    request = await _read_turn(edge, config, checked, lambda request: request.turn, prepare=with_stored_items)
    conversation = turns[0] if turns else None
    if conversation is not None:
        if not request.store:
            raise ApiError("invalid_request", "store: a response of a conversation is stored with it; store must not be false "
                           "(and its instructions, tools and metadata must fit what a stored response keeps).", param="store")
        request = replace(request, echo={**request.echo, "conversation": {"id": CONVERSATION_PREFIX + conversation.key}})
    if request.store:
        return await _stored_response(edge, exchange, admitted, request, owner, conversation)
    encoder = ResponsesEncoder(created_at=int(time.time()), response=request.echo, streamed=request.stream, names=request.names,
                               max_tokens=request.turn.max_tokens, reasoning_summary=request.reasoning_summary)
    if request.stream:
        padding = config.padding if request.obfuscation else 0
        return await _stream(edge, exchange, admitted, request.turn, encoder, padding=padding)
    return await _collected(edge, exchange, admitted, request.turn, encoder)


async def _stored_response(edge: JsEdge, exchange: Exchange, admitted: Admitted, request: ResponsesRequest, owner: str,
                           conversation: ConversationTurn | None) -> Reply:
    """A response kept in its own Durable Object: streamed from it, read whole from it, or,
    in the background and not streamed, its head at once."""
    turn = request.turn
    call = model_call(turn, admitted.config, request_id=exchange.request_id, route=admitted.route.name,
                      client=client_of(exchange, admitted).value)
    first = await resumable.start_response(edge.env, request, call, request_id=exchange.request_id, created_at=int(time.time()),
                                           owner=owner, conversation=conversation)
    if request.stream:
        return exchange.reply(first.body, 200, ReaderFormat.RESPONSES.headers)
    if request.background:
        return exchange.reply(str(await first.text()), 200, {"content-type": http.JSON_TYPE})
    body, status = await resumable.read_whole(first.body)
    return exchange.reply(body, status, {"content-type": http.JSON_TYPE})


async def openai_stored_response(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    """GET: a stored response (`?stream=true`: its events, from `starting_after` on); DELETE: remove it."""
    request, owner, response_id = exchange.request, owner_of(admitted), admitted.key or ""
    if request.method == "DELETE":
        deleted = await resumable.response_call(edge.env, response_id, "delete_response", owner)
        return exchange.reply(str(await deleted.text()), 200, {"content-type": http.JSON_TYPE})
    query = http.query_of(request.url)
    stream = query.get("stream", "false")
    if stream not in ("true", "false"):
        raise ApiError("invalid_request", "stream must be true or false.", param="stream")
    if stream == "false":
        if "starting_after" in query:
            raise ApiError("invalid_request", "starting_after is only allowed when stream is true.", param="starting_after")
        found = await resumable.response_call(edge.env, response_id, "describe_response", owner)
        return exchange.reply(str(await found.text()), 200, {"content-type": http.JSON_TYPE})
    body = await resumable.read_response(edge.env, response_id, query.get("starting_after"), owner, peek=request.method == "HEAD")
    # Nothing after that sequence number, and the response has ended: an empty stream.
    return exchange.reply(body if body is not None else "", 200, ReaderFormat.RESPONSES.headers)


async def openai_response_input_items(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    """A page of a stored response's input items (`?after=&limit=&order=`)."""
    query = PageQuery.of(http.query_of(exchange.request.url))
    listed = await resumable.response_input_items(edge.env, admitted.key or "", query, owner_of(admitted))
    return exchange.reply(listed, 200, {"content-type": http.JSON_TYPE})


async def openai_cancel_response(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    cancelled = await resumable.response_call(edge.env, admitted.key or "", "cancel_response", owner_of(admitted))
    return exchange.reply(str(await cancelled.text()), 200, {"content-type": http.JSON_TYPE})


async def _collected(edge: JsEdge, exchange: Exchange, admitted: Admitted, turn: ChatTurn, encoder: Encoder) -> Reply:
    """An answer read whole inside the Worker (`stream: false`): the encoder's one frame is
    the body, and a failure's status is its error code's."""
    started = await _start_model(edge, exchange, admitted, turn)
    reframer = Reframer(request_id=exchange.request_id, model=started.model, max_padding=0, stop=turn.stop, max_tokens=turn.max_tokens,
                        encoder=encoder, gateway_log_id=started.gateway_log_id,
                        answer_check=answer_check(turn.output, tools_offered=bool(turn.tool_inputs)),
                        framing=catalog.framing_of(started.model))
    # Nothing is sent before the answer is whole, so there is nothing to ping: without
    # this the ping deadline, never moved by a send, would wake the reader every tick.
    timeouts = replace(admitted.config.timeouts, ping_interval=math.inf)
    lifecycle = StreamLifecycle(reframer, timeouts, now=time.monotonic())
    fields = _log_fields(exchange, admitted.route.name, started)
    log("chat_stream_started", **fields)
    body = await collect(started.stream, lifecycle, log_fields=fields)
    code = reframer.last_error_code
    status = 200 if code is None else ERROR_CODES[code].status
    headers = {"content-type": http.JSON_TYPE}
    skipped = reframer.stats.skipped
    if code is None and skipped:
        headers[SKIPPED_HEADER] = str(skipped)  # frames left out: the answer may have gaps
    return exchange.reply(body, status, headers)


def _messages_turn(request: MessagesRequest) -> ChatTurn:
    return request.turn


async def anthropic_messages(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    request = await _read_turn(edge, admitted.config, validate_messages, _messages_turn)
    encoder = AnthropicEncoder(streamed=request.stream, thinking=request.thinking)
    if request.stream:
        return await _stream(edge, exchange, admitted, request.turn, encoder)
    return await _collected(edge, exchange, admitted, request.turn, encoder)


async def anthropic_count_tokens(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    # Checked as a Messages request is, never a model call: an estimate (chat.api.anthropic).
    request = await _read_turn(edge, admitted.config, validate_count, _messages_turn)
    return exchange.json(count_tokens(request))


async def openai_models(edge: JsEdge, exchange: Exchange, admitted: Admitted) -> Reply:
    return exchange.json(model_list(admitted.config))


async def _stream(
    edge: JsEdge, exchange: Exchange, admitted: Admitted, turn: ChatTurn, encoder: Encoder, *,
    padding: int | None = None,
) -> Reply:
    config, route = admitted.config, admitted.route.name
    await load_plumbing()  # before the model starts: a failed import costs no inference
    started = await _start_model(edge, exchange, admitted, turn)
    reframer = Reframer(request_id=exchange.request_id, model=started.model, encoder=encoder, stop=turn.stop, max_tokens=turn.max_tokens,
                        max_padding=config.padding if padding is None else padding, gateway_log_id=started.gateway_log_id,
                        answer_check=answer_check(turn.output, tools_offered=bool(turn.tool_inputs)),
                        framing=catalog.framing_of(started.model))
    lifecycle = StreamLifecycle(reframer, config.timeouts, now=time.monotonic())
    relay = StreamRelay(
        upstream=started.stream, lifecycle=lifecycle, keep_alive=edge.keep_alive,
        log_fields=_log_fields(exchange, route, started),
    )
    return exchange.reply(relay.readable(), 200, encoder.headers)


async def _start_model(edge: JsEdge, exchange: Exchange, admitted: Admitted, turn: ChatTurn) -> Started:
    config, route = admitted.config, admitted.route.name
    call = model_call(turn, config, request_id=exchange.request_id, route=route, client=client_of(exchange, admitted).value)
    return await start_model_stream(edge.env.AI, call, config, exchange.request_id, edge.keep_alive)


def _log_fields(exchange: Exchange, route: str, started: Started) -> dict[str, Any]:
    # The gateway's log id, where there is one, ties this request's lines to its entry there.
    fields = {"request_id": exchange.request_id, "model": started.model, "route": route}
    if started.gateway_log_id is not None:
        fields["gateway_log_id"] = started.gateway_log_id
    return fields


def handler_of(route: Route) -> Handler:
    """The function a route's entry names (`module:function`), imported the first time."""
    found = _HANDLERS.get(route.name)
    if found is None:
        assert route.handler is not None  # (answered before dispatch otherwise)
        module, _, name = route.handler.partition(":")
        found = _HANDLERS[route.name] = getattr(import_module(module), name)
    return found


# Every route's handler, looked up once here: a name missing fails at import, so in every
# runtime test.
_HANDLERS: dict[str, Handler] = {}
for _route in ROUTES:
    if _route.handler is not None:
        handler_of(_route)

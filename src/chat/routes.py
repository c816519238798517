"""Routing and the request handlers. Handlers stay thin: checks come from the pure
modules, the model from `upstream`, the streaming from `relay`."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable
from typing import Any

import js
from pyodide.ffi import create_proxy, jsnull, to_js

from sse import UI_MESSAGE_STREAM_HEADER, Encoder, NDJSONEncoder, Reframer, SSEEncoder, UIMessageStreamEncoder

from . import http, resumable
from .api_errors import ApiError
from .body import read_body
from .config import Config, ConfigError
from .lifecycle import StreamLifecycle
from .limiter import spend
from .logs import log
from .rate_limit import client_key, limited_route
from .relay import StreamRelay
from .upstream import start_model_stream
from .validation import ChatTurn, is_json_media_type, parse_json_body, validate_chat, validate_ui_chat

ROUTES: dict[str, tuple[str, ...]] = {
    "/health": ("GET", "HEAD"),
    "/api/chat": ("POST",),
    "/api/chat/raw": ("POST",),
    "/api/ui-chat": ("POST",),
}


class Exchange:
    """One request and what answering it needs: config, ids, CORS, background work."""

    def __init__(self, request: Any, env: Any, ctx: Any) -> None:
        self.js_request = request.js_object if hasattr(request, "js_object") else request
        self.env = env
        self.ctx = ctx
        self.request_id = os.urandom(16).hex()  # 128 random bits, like uuid4 (without importing uuid)
        self.cors: dict[str, str] = {}
        self.origin = self.header("origin")

    def header(self, name: str) -> str | None:
        value = self.js_request.headers.get(name)
        return None if value is None or value is jsnull else str(value)

    def keep_alive(self, work: Awaitable[None]) -> None:
        """Keep the request context alive until `work` finishes (ctx.waitUntil)."""
        task = asyncio.ensure_future(work)
        proxy = create_proxy(task)
        self.ctx.waitUntil(proxy)
        task.add_done_callback(lambda _: proxy.destroy())

    def response(self, body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Any:
        merged = {**self.cors, "x-request-id": self.request_id, **(headers or {})}
        init = to_js({"status": status, "headers": merged}, dict_converter=js.Object.fromEntries)
        return js.Response.new(body, init)

    def json(self, payload: object, status: int = 200, headers: dict[str, str] | None = None) -> Any:
        return self.response(json.dumps(payload), status, {"content-type": http.JSON_TYPE, **(headers or {})})

    def error(self, error: ApiError) -> Any:
        return self.response(http.error_body(error, self.request_id), error.status, {"content-type": http.JSON_TYPE, **error.headers})


def read_config(env: Any) -> Config:
    def read(name: str) -> str | None:
        value = getattr(env, name, None)  # a missing var is an AttributeError on the JsProxy
        return None if value is None else str(value)

    return Config.from_env(read)


async def handle(request: Any, env: Any, ctx: Any) -> Any:
    exchange = Exchange(request, env, ctx)
    try:
        return await _route(exchange)
    except ApiError as error:
        return exchange.error(error)
    except ConfigError as problem:
        log("config_invalid", request_id=exchange.request_id, detail=str(problem))
        return exchange.error(ApiError(500, "internal_error", "The server is misconfigured."))
    except Exception as exc:  # noqa: BLE001 - never a stack trace to the client
        log("internal_error", request_id=exchange.request_id, detail=type(exc).__name__)
        return exchange.error(ApiError(500, "internal_error", "Something went wrong on our side."))


async def _route(exchange: Exchange) -> Any:
    method = str(exchange.js_request.method)
    path = http.path_of(str(exchange.js_request.url))
    allowed = ROUTES.get(path)
    target = None
    if allowed is None:
        target = http.stream_path(path)
        if target is None:
            raise ApiError(404, "not_found", "There is nothing at this path.")
        allowed = ("GET", "DELETE") if target[0] == "chat-stream" else ("GET",)
    if path == "/health" and method in allowed:
        return exchange.json({"status": "ok"})
    config = read_config(exchange.env)
    if not http.origin_allowed(exchange.origin, str(exchange.js_request.url), config):
        raise ApiError(403, "origin_not_allowed", "This origin may not use the API.")
    exchange.cors = http.cors_headers(exchange.origin)
    if method == "OPTIONS":
        return exchange.response(None, 204, http.preflight_headers(exchange.origin))
    if method not in allowed:
        error = ApiError(405, "method_not_allowed", f"Use {' or '.join(allowed)} here.")
        error.headers["allow"] = ", ".join((*allowed, "OPTIONS"))
        raise error
    token = _authorize(exchange, config)
    if target is not None:
        return await _stream_request(exchange, target, method)
    route = limited_route(path, method)
    if route is not None:
        # After auth (only valid tokens reach the limiter), before the body is read.
        key = client_key(token=token, ip=exchange.header("cf-connecting-ip"))
        await spend(exchange.env, key, request_id=exchange.request_id, route=route)
    if path == "/api/ui-chat":
        turn = validate_ui_chat(await _read_payload(exchange, config), config)
        if turn.resumable:
            return await _chat_resumable(exchange, config, turn, "ui")
        return await _chat(exchange, config, turn, UIMessageStreamEncoder(), route="ui-chat", headers=dict([UI_MESSAGE_STREAM_HEADER]))
    turn = validate_chat(await _read_payload(exchange, config), config)
    if path == "/api/chat/raw":
        if turn.resumable:
            raise ApiError(400, "invalid_request", "resumable: /api/chat/raw passes the model's stream through; use /api/chat.")
        return await _chat_raw(exchange, config, turn)
    if turn.resumable:
        return await _chat_resumable(exchange, config, turn, resumable.reader_format(exchange.header("accept")))
    encoder = NDJSONEncoder() if http.prefers_ndjson(exchange.header("accept")) else SSEEncoder()
    return await _chat(exchange, config, turn, encoder, route="chat")


def _authorize(exchange: Exchange, config: Config) -> str | None:
    """The bearer token when the Worker requires one and it is valid; raises ApiError(401)."""
    if config.auth_token is None:
        return None
    import hmac  # only Workers with a token pay for this import at start-up

    supplied = exchange.header("authorization") or ""
    scheme, _, token = supplied.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), config.auth_token.encode()):
        raise ApiError(401, "unauthorized", "A valid bearer token is required.", headers={"www-authenticate": "Bearer"})
    return config.auth_token


async def _read_payload(exchange: Exchange, config: Config) -> Any:
    if not is_json_media_type(exchange.header("content-type")):
        raise ApiError(415, "unsupported_media_type", "Send the chat turn as application/json.")
    body = await read_body(exchange.js_request, exchange.header("content-length"), config.max_body_bytes)
    return parse_json_body(body)


async def _chat(
    exchange: Exchange, config: Config, turn: ChatTurn, encoder: Encoder, *, route: str, headers: dict[str, str] | None = None
) -> Any:
    model, upstream = await _start_model(exchange, config, turn)
    reframer = Reframer(request_id=exchange.request_id, model=model, encoder=encoder, max_padding=config.padding)
    lifecycle = StreamLifecycle(reframer, config.timeouts, now=time.monotonic())
    relay = StreamRelay(
        upstream=upstream, lifecycle=lifecycle, keep_alive=exchange.keep_alive,
        log_fields={"request_id": exchange.request_id, "model": model, "route": route},
    )
    stream_headers = {"content-type": encoder.content_type, **http.STREAM_HEADERS, **(headers or {})}
    return exchange.response(relay.readable(), 200, stream_headers)


async def _chat_resumable(exchange: Exchange, config: Config, turn: ChatTurn, format: str) -> Any:
    body, headers = await resumable.start(exchange.env, config, turn, request_id=exchange.request_id, format=format)
    return exchange.response(body, 200, headers)


async def _stream_request(exchange: Exchange, target: tuple[str, str], method: str) -> Any:
    """GET: a reader of a resumable answer; DELETE: stop it."""
    if method == "DELETE":
        await resumable.stop(exchange.env, target[1])
        return exchange.response(None, 204)
    found = await resumable.read(
        exchange.env, target, last_event_id=exchange.header("last-event-id"), accept=exchange.header("accept")
    )
    if found is None:
        return exchange.response(None, 204)
    body, headers = found
    return exchange.response(body, 200, headers)


async def _chat_raw(exchange: Exchange, config: Config, turn: ChatTurn) -> Any:
    model, upstream = await _start_model(exchange, config, turn)
    log("chat_stream_started", request_id=exchange.request_id, model=model, route="raw")
    # Untouched: workerd pipes the model's bytes to the client natively. If the model stream
    # fails mid-way the client's body is cut short and workerd's HTTP server logs its own
    # "Uncaught exception: ... disconnected prematurely" (no provider text). Piping through
    # JS to catch that would still end in an errored body (the same line), or in a clean
    # close that a pass-through client could not tell from a finished answer.
    return exchange.response(upstream, 200, {"content-type": http.SSE_TYPE, **http.STREAM_HEADERS})


async def _start_model(exchange: Exchange, config: Config, turn: ChatTurn) -> tuple[str, Any]:
    inputs = turn.model_inputs(config.system_prompt)
    return await start_model_stream(exchange.env.AI, inputs, config, exchange.request_id, exchange.keep_alive)

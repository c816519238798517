"""The adapter between workerd's request, env and ctx and the Worker's plain values (FFI).

The one place that reads the JS request (converted once into a PlainRequest, its body
read under a byte limit) and [vars] from `env`, and turns a plain Reply into the
js.Response (through the toolkit, `ffi`). Everything else decides on plain values.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import js
from pyodide.ffi import JsException, jsnull

from chat.config import Config
from chat.platform import ffi
from chat.web.errors import ApiError
from chat.web.exchange import PlainRequest, Reply


def plain_request(js_request: Any) -> PlainRequest:
    # One call across the FFI for all headers: a JS object of them, converted whole.
    headers = js.Object.fromEntries(js_request.headers).to_py()
    return PlainRequest(method=str(js_request.method), url=str(js_request.url), headers={str(k): str(v) for k, v in headers.items()})


def read_config(env: Any) -> Config:
    def read(name: str) -> str | None:
        value = getattr(env, name, None)  # a missing var is an AttributeError on the JsProxy
        return None if value is None else str(value)

    return Config.from_env(read)


def too_large(limit: int) -> ApiError:
    return ApiError("payload_too_large", f"The request body is larger than {limit} bytes.")


class JsEdge:
    """One request's JS side: `request` is its plain form."""

    def __init__(self, request: Any, env: Any, ctx: Any) -> None:
        self._js_request = request.js_object if hasattr(request, "js_object") else request
        self.env = env
        self._ctx = ctx
        self.request = plain_request(self._js_request)

    def config(self) -> Config:
        return read_config(self.env)

    def keep_alive(self, work: Awaitable[None]) -> None:
        """Keep the request context alive until `work` finishes (ctx.waitUntil)."""
        ffi.keep_alive(self._ctx, work)

    def respond(self, reply: Reply) -> Any:
        return ffi.response(reply.body, reply.status, reply.headers)

    async def read_body(self, limit: int) -> bytes:
        """The body, refused with ApiError(payload_too_large) past `limit` bytes whatever
        Content-Length claims, or ApiError(invalid_request) when it cannot be read.

        Its chunks are gathered on the JS side and cross into Python once, whole: Pyodide's
        heap is WebAssembly memory, which grows to its high-water mark and never shrinks, and
        a body of images is megabytes (docs/images.md, "Memory"). Each copy kept out of it
        is one no later request pays for."""
        declared_length = self.request.header("content-length")
        if declared_length is not None and declared_length.isascii() and declared_length.isdigit():
            # Compared by length first: int() refuses a header of thousands of digits.
            digits = declared_length.lstrip("0")
            if len(digits) > len(str(limit)) or int(digits or "0") > limit:
                raise too_large(limit)
        body = self._js_request.body
        if body is None or body is jsnull:
            return b""
        reader = body.getReader()
        pieces: list[Any] = []  # the JS chunks, never copied into Python
        size = 0
        try:
            while True:
                try:
                    result = await reader.read()
                except JsException:
                    # The client went away mid-upload (or sent a broken body): its fault, not
                    # a failure of ours, and nobody is left to read the answer.
                    raise ApiError("invalid_request", "The request body could not be read.") from None
                if result.done:
                    break
                size += int(result.value.byteLength)
                if size > limit:
                    await reader.cancel()
                    raise too_large(limit)
                pieces.append(result.value)
        finally:
            reader.releaseLock()
        whole = pieces[0] if len(pieces) == 1 else js.Uint8Array.new(size)
        if len(pieces) > 1:
            offset = 0
            for piece in pieces:
                whole.set(piece, offset)
                offset += int(piece.byteLength)
        data: bytes = whole.to_bytes()
        return data

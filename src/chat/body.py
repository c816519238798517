"""Reading a request body under a byte limit, whatever Content-Length claims (FFI)."""

from __future__ import annotations

from typing import Any

from pyodide.ffi import jsnull

from .api_errors import ApiError


def too_large(limit: int) -> ApiError:
    return ApiError(413, "payload_too_large", f"The request body is larger than {limit} bytes.")


async def read_body(js_request: Any, declared_length: str | None, limit: int) -> bytes:
    if declared_length is not None and declared_length.isdigit() and int(declared_length) > limit:
        raise too_large(limit)
    body = js_request.body
    if body is None or body is jsnull:
        return b""
    reader = body.getReader()
    pieces: list[bytes] = []
    size = 0
    try:
        while True:
            result = await reader.read()
            if result.done:
                break
            piece = result.value.to_bytes()
            size += len(piece)
            if size > limit:
                await reader.cancel()
                raise too_large(limit)
            pieces.append(piece)
    finally:
        reader.releaseLock()
    return b"".join(pieces)

"""Reading a request body under a byte limit, whatever Content-Length claims (FFI)."""

from __future__ import annotations

from typing import Any

from pyodide.ffi import JsException, jsnull

from .api_errors import ApiError


def too_large(limit: int) -> ApiError:
    return ApiError(413, "payload_too_large", f"The request body is larger than {limit} bytes.")


async def read_body(js_request: Any, declared_length: str | None, limit: int) -> bytes:
    if declared_length is not None and declared_length.isascii() and declared_length.isdigit():
        # Compared by length first: int() refuses a header of thousands of digits.
        digits = declared_length.lstrip("0")
        if len(digits) > len(str(limit)) or int(digits or "0") > limit:
            raise too_large(limit)
    body = js_request.body
    if body is None or body is jsnull:
        return b""
    reader = body.getReader()
    pieces: list[bytes] = []
    size = 0
    try:
        while True:
            try:
                result = await reader.read()
            except JsException:
                # The client went away mid-upload (or sent a broken body): its fault, not
                # a failure of ours, and nobody is left to read the answer.
                raise ApiError(400, "invalid_request", "The request body could not be read.") from None
            if result.done:
                break
            # Counted before copying into Python: one huge piece must not cost its size.
            size += int(result.value.byteLength)
            if size > limit:
                await reader.cancel()
                raise too_large(limit)
            pieces.append(result.value.to_bytes())
    finally:
        reader.releaseLock()
    return b"".join(pieces)

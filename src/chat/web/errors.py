"""Failures answered before any stream starts, and how this project's API renders them.

Codes, statuses and generic messages come from one table (sse.ERROR_CODES); each API
surface renders an ApiError in its own shape (this module: `{"error": {"code",
"message"}, "request_id"}`; chat.api.openai: OpenAI's).
"""

from __future__ import annotations

import json

from sse import ERROR_CODES


class ApiError(Exception):
    """A client-facing failure: a code of sse.ERROR_CODES, with the table's status and
    generic message unless `message` is more specific (a 400 naming its field). `param`
    names the request field at fault, for surfaces that report it (OpenAI's). Raises
    KeyError for a code not in the table, so no undocumented code reaches a client."""

    def __init__(
        self, code: str, message: str | None = None, *, param: str | None = None, headers: dict[str, str] | None = None
    ) -> None:
        entry = ERROR_CODES[code]
        super().__init__(message or entry.message)
        self.status = entry.status
        self.code = code
        self.message = message or entry.message
        self.param = param
        self.headers = headers or {}


def invalid_request(message: str, *, param: str | None = None) -> ApiError:
    return ApiError("invalid_request", message, param=param)


def error_body(error: ApiError, request_id: str) -> str:
    """This project's own error shape (docs/protocol.md, "Errors before the stream")."""
    return json.dumps({"error": {"code": error.code, "message": error.message}, "request_id": request_id})

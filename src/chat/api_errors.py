"""Failures answered before any stream starts, and how this project's API renders them.

Codes, statuses and generic messages come from one table (sse.ERROR_CODES); each API
surface renders an ApiError in its own shape (this module: `{"error": {"code",
"message"}, "request_id"}`; `openai_api`: OpenAI's).
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


# Workers AI reports failures as "<code>: <description>" (its errors table,
# workers-ai/platform/errors, last updated 2026-09-17); these codes mean "try later".
RATE_LIMIT_CODES = frozenset({3040, 3036})
# And these that the model is not there for this account: our code for each.
MODEL_REFUSED_CODES = {5007: "no_such_model", 5035: "model_requires_paid_plan"}


# A provider message can be any length; its code, if any, is within the first prefixes.
_CODE_SEARCH_CHARS = 200
_CODE_SEARCH_PREFIXES = 4
_MAX_CODE_DIGITS = 5


def binding_error_code(message: str) -> int | None:
    """The numeric code at the start of a Workers AI error message, if there is one.

    Errors crossing the FFI may be prefixed with their JS type ("Error: 3040: ..."), so a
    few "<word>:" prefixes are skipped; a loop over a bounded head of the message, since
    the message comes from outside.
    """
    rest = message[:_CODE_SEARCH_CHARS]
    for _ in range(_CODE_SEARCH_PREFIXES):
        head, separator, rest = rest.partition(":")
        if not separator:
            return None
        head = head.strip()
        if head.isascii() and head.isdigit():
            # Workers AI codes have four digits; anything longer is not one of them and
            # is not copied into a log.
            return int(head) if len(head) <= _MAX_CODE_DIGITS else None
    return None

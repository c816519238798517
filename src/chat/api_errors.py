"""Failures answered before any stream starts: a stable code, a status, a generic message."""

from __future__ import annotations


class ApiError(Exception):
    """Raised by request handling; rendered as `{"error": {"code", "message"}, "request_id"}`."""

    def __init__(self, status: int, code: str, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


def invalid_request(message: str) -> ApiError:
    return ApiError(400, "invalid_request", message)


# Workers AI reports failures as "<code>: <description>"; these codes mean "try later".
RATE_LIMIT_CODES = frozenset({3040, 3036})


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

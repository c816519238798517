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


def binding_error_code(message: str) -> int | None:
    """The numeric code at the start of a Workers AI error message, if there is one."""
    head, separator, _ = message.strip().partition(":")
    if separator and head.strip().isdigit():
        return int(head.strip())
    # Errors crossing the FFI may be prefixed with their JS type ("Error: 3040: ...").
    _, separator, rest = message.partition(": ")
    if separator and rest != message:
        return binding_error_code(rest)
    return None

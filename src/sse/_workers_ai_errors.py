"""Workers AI's error codes: read from a failure's message, and what they mean.

The binding reports a failure as "<code>: <description>", and a stream that fails in band
may carry the same code (docs/upstream-shapes.md). Both the Worker's start of a model call
and the normalizer read codes here, so each code's meaning lives in one place.
"""

from __future__ import annotations

__all__ = ["RATE_LIMIT_CODES", "TIMEOUT_CODES", "binding_error_code"]

# Workers AI's errors table (developers.cloudflare.com/workers-ai/platform/errors; read
# 2026-09-17, and again 2026-12-01 from a stored copy that says "last updated 2026-07-29").
# "Try later": 3036, the daily free allocation spent; 3040, out of capacity.
RATE_LIMIT_CODES = frozenset({3040, 3036})
# "Request timeout" (408). 3008, "Request was aborted", is a plain failure.
TIMEOUT_CODES = frozenset({3007})

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

"""What a failed call of the AI binding means: the Workers AI error code at the start of
its message, and which codes say "try later" or "not for this account". Pure Python."""

from __future__ import annotations

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

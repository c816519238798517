"""json.loads for untrusted text, safe where the stack is small and overflowing it is fatal.

json.loads recurses once per nesting level. On CPython a deep document raises
RecursionError; in the Worker's Pyodide it overflows the JavaScript stack, which is not an
exception at all: Pyodide reports a fatal error and workerd aborts the isolate with every
stream in flight (about 5,000 levels, 10 KB of brackets, was enough). So the depth is
measured first, without recursion, and the parse only runs when it is small.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any, NoReturn

__all__ = ["MAX_JSON_DEPTH", "JSONDepthError", "loads_bounded"]

# Our own documents nest 3 levels (a chat body) to 6 (an OpenAI tool-call chunk); AI SDK
# UI messages with tool parts a few more. 64 leaves room for real payloads and is a
# hundredth of what the Pyodide stack survives.
MAX_JSON_DEPTH = 64

# Every backslash escape, removed before strings are: afterwards a string is just two
# quotes and what lies between them, so no regex ever backtracks (an escaped quote could
# otherwise make each quote of a hostile body start a scan to the end: quadratic).
_ESCAPE = re.compile(r"\\.", re.DOTALL)
_STRING = re.compile(r'"[^"]*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class JSONDepthError(ValueError):
    """A JSON text nests arrays and objects deeper than the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"JSON nested deeper than {limit} levels")
        self.limit = limit


def nesting_depth(text: str) -> int:
    """How deep the arrays and objects of `text` nest, counted without recursion and
    without counting brackets inside strings. For text that is not JSON the count may be
    higher than what a parser would reach before failing, never lower."""
    bare = _NOT_BRACKET.sub("", _STRING.sub("", _ESCAPE.sub("", text)))
    return max(accumulate(map(_STEP.__getitem__, bare)), default=0)


def _refuse_constant(name: str) -> NoReturn:
    # json.loads accepts NaN and Infinity by default, though RFC 8259 has no such values.
    raise json.JSONDecodeError(f"{name} is not a JSON value", name, 0)


def loads_bounded(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parses strict JSON (RFC 8259) whose nesting is at most `max_depth`.

    Raises JSONDepthError (a ValueError) when it nests deeper, json.JSONDecodeError when
    the text is not JSON (NaN, Infinity and -Infinity included), and a plain ValueError
    for an integer longer than Python's limit on digits (valid JSON, but too large to
    read). Numbers too large for a float read as inf: callers that take numbers check
    their range.
    """
    # Cheap exit for nearly every document: fewer openers than the limit cannot nest
    # deeper than it.
    if text.count("[") + text.count("{") > max_depth and nesting_depth(text) > max_depth:
        raise JSONDepthError(max_depth)
    return json.loads(text, parse_constant=_refuse_constant)

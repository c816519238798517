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
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, NoReturn

__all__ = ["MAX_JSON_DEPTH", "JSONDepthError", "JSONNumber", "dumps_exact", "loads_bounded", "loads_exact", "portable_json"]

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
    # Without a backslash there is nothing to remove, and no copy of a body of megabytes.
    unescaped = _ESCAPE.sub("", text) if "\\" in text else text
    bare = _NOT_BRACKET.sub("", _STRING.sub("", unescaped))
    return max(accumulate(map(_STEP.__getitem__, bare)), default=0)


def _refuse_constant(name: str) -> NoReturn:
    # json.loads accepts NaN and Infinity by default, though RFC 8259 has no such values.
    raise json.JSONDecodeError(f"{name} is not a JSON value", name, 0)


# Built once: json.loads with a hook builds a decoder per call (a tenth of a small frame's
# parse), and a decoder keeps no state between documents.
_STRICT = json.JSONDecoder(parse_constant=_refuse_constant)


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
    return _STRICT.decode(text)


@dataclass(frozen=True, slots=True)
class JSONNumber:
    """A JSON number kept as it was written: its `lexeme`, exactly the wire text.

    Not a str (so no check for text mistakes it for one) and not a float (so 1.10 stays
    1.10 and 1e400 stays 1e400, where a float would give 1.1 and inf).
    """

    lexeme: str


# Integers up to this many digits read as int; JSON allows any length, and Python's int()
# refuses more than 4,300 digits. Only "-0" reads back differently through int ("0").
_MAX_INT_DIGITS = 4000


def _exact_int(lexeme: str) -> int | JSONNumber:
    if lexeme == "-0" or len(lexeme) > _MAX_INT_DIGITS:
        return JSONNumber(lexeme)
    return int(lexeme)


# The same for frames, with numbers kept as written.
_EXACT = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=JSONNumber, parse_int=_exact_int)


def loads_exact(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """loads_bounded for upstream frames, where a number may be text: a number with a
    fraction or an exponent reads as a JSONNumber, an integer as an int (as a JSONNumber
    when int() would change or refuse it: "-0", more than 4,000 digits). Raises as
    loads_bounded does, except that no integer is too long."""
    if text.count("[") + text.count("{") > max_depth and nesting_depth(text) > max_depth:
        raise JSONDepthError(max_depth)
    return _EXACT.decode(text)


def dumps_exact(value: Any) -> str:
    """Compact JSON of a value loads_exact read, each JSONNumber written as its lexeme.

    Recursive, but only over what loads_exact accepted, which nests at most MAX_JSON_DEPTH
    levels. Raises TypeError for a value JSON cannot hold.
    """
    if isinstance(value, JSONNumber):
        return value.lexeme
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(key, ensure_ascii=False)}:{dumps_exact(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dumps_exact(item) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False)


# A lone surrogate: JSON can carry one (`"\ud800"`) and a Python str holds it, but a JS
# string, a SQLite TEXT column or a strict UTF-8 encode would turn it into U+FFFD or fail.
_SURROGATE = re.compile("[\ud800-\udfff]")


def portable_json(value: object) -> str:
    """JSON text of `value` that crosses into JS and storage unchanged: UTF-8 text as it is,
    and, when it holds a lone surrogate, every non-ASCII character as its escape."""
    text = json.dumps(value, ensure_ascii=False)
    return json.dumps(value) if _SURROGATE.search(text) else text

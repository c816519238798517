"""Tool calls, assembled from the fragments an upstream streams them in.

OpenAI-style streams send a call in pieces under `choices[0].delta.tool_calls`: the first
entry of a call has its id, type and name, later ones only argument text, matched by
`index`; vLLM adds a "finalization" entry of nulls between calls. Native Workers AI frames
send whole calls in a top-level `tool_calls`, arguments as a string or an object, often
without an index. Both come here entry by entry; out come `ToolCallStart`,
`ToolCallDelta` and `ToolCall` events, each as soon as it is known: a call is complete when
another starts, when the model gives its finish_reason, or at the end of the stream, never
held until the stream closes.

Calls get this module's own index (0, 1, 2, ... in the order they started), so a hostile
upstream index (negative, huge, repeated) never reaches a client. Everything is bounded:
calls per answer, argument characters per call and per answer. Going over ends the answer
with `tool_calls_too_large`; an entry that cannot belong to any call (arguments for a call
that never started or already ended) ends it with `upstream_malformed`. No call is merged
into another and no fragment is dropped silently.
"""

from __future__ import annotations

import json
from typing import Any

from ._events import ToolCall, ToolCallDelta, ToolCallStart
from ._json import JSONDepthError, JSONNumber, dumps_exact, loads_bounded

__all__ = ["MAX_TOOL_ARGUMENT_CHARS", "MAX_TOOL_CALL_CHARS", "MAX_TOOL_CALLS", "MAX_TOOL_FRAME_BYTES", "ToolCallAssembler", "ToolEvent"]

ToolEvent = ToolCallStart | ToolCallDelta | ToolCall

# Names and ids are identifiers; anything longer is not one.
MAX_TOOL_NAME_CHARS = 256
MAX_TOOL_ID_CHARS = 256

# Workers AI's OpenAI-style model schemas take at most 128 functions a request (model
# pages, checked 2026-12-01): an answer calling more is not a real one.
MAX_TOOL_CALLS = 128
# One call's arguments: room for a whole source file written by a coding agent, and small
# enough that the frame of a whole call (its arguments as a JSON string, and again parsed:
# at most 6 bytes a character each, as for "\u001f" or a lone surrogate) stays a row a
# resumable answer's storage takes ("Maximum string, BLOB or table row size: 2 MB",
# developers.cloudflare.com/durable-objects/platform/limits/, checked 2026-12-01).
MAX_TOOL_CALL_CHARS = 128 * 1024
# The longest frame of a whole call, in bytes, with room for its id, name and keys.
MAX_TOOL_FRAME_BYTES = 12 * MAX_TOOL_CALL_CHARS + 6 * (MAX_TOOL_NAME_CHARS + MAX_TOOL_ID_CHARS) + 1024
# A call's input nests at most this deep: a client sends it back inside its history (the AI
# SDK inside a message's parts), which must stay within the request body's 64 levels.
MAX_TOOL_INPUT_DEPTH = 32
# All calls of one answer together: the same bound as a collected answer's text.
MAX_TOOL_ARGUMENT_CHARS = 1024 * 1024


class ToolCallError(Exception):
    """The upstream's tool calls cannot be passed on; `code` is the stream's error code."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class _Call:
    __slots__ = ("arguments", "chars", "id", "index", "name", "upstream_index")

    def __init__(self, index: int, call_id: str, name: str, upstream_index: int | None) -> None:
        self.index = index
        self.id = call_id
        self.name = name
        self.upstream_index = upstream_index
        self.arguments: list[str] = []
        self.chars = 0


def _identifier(value: object, limit: int) -> str | None:
    # Printable text of bounded length, or None: what a client can show and send back.
    if isinstance(value, str) and 0 < len(value) <= limit and value.isprintable():
        return value
    return None


def _arguments_text(value: object) -> str | None:
    """An entry's argument text: a string as it is, a number as its lexeme (a fragment
    such as `"arguments": 12`), an object or array (native frames) as compact JSON with
    every number as sent; nothing as ""; None for anything else (not arguments at all)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, JSONNumber):
        return value.lexeme
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, dict | list):
        return dumps_exact(value)
    return None


def parsed_input(arguments: str) -> tuple[dict[str, Any] | None, str | None]:
    """(input, None) for arguments that are a JSON object ("" counts as {}: a call without
    parameters), else (None, why). Depth-bounded: Pyodide's stack must not overflow."""
    if not arguments.strip():
        return {}, None
    try:
        value = loads_bounded(arguments, max_depth=MAX_TOOL_INPUT_DEPTH)
    except JSONDepthError:
        return None, f"The arguments nest deeper than {MAX_TOOL_INPUT_DEPTH} levels."
    except ValueError:
        return None, "The arguments are not valid JSON."
    if not isinstance(value, dict):
        return None, "The arguments are not a JSON object."
    try:
        # A number past a float's range (1e400) reads as inf, which no JSON can carry on.
        json.dumps(value, allow_nan=False)
    except ValueError:
        return None, "The arguments hold a number too large to represent."
    return value, None


class ToolCallAssembler:
    """Reads tool-call entries and returns the events they complete. `call_id_prefix`
    names a call the upstream gave no id (native frames): `<prefix>_<index>`."""

    def __init__(self, call_id_prefix: str) -> None:
        self._prefix = call_id_prefix
        self._calls = 0
        self._chars = 0
        self._open: _Call | None = None  # the call fragments go to
        self._ids: set[str] = set()  # at most MAX_TOOL_CALLS
        self.fragments = 0  # entries that carried model output: starts and argument pieces

    @property
    def open(self) -> bool:
        """Whether a call is being written (its arguments may still grow)."""
        return self._open is not None

    @property
    def count(self) -> int:
        """Calls started so far."""
        return self._calls

    def read(self, entries: object, out: list[ToolEvent]) -> bool:
        """Appends the events of one frame's `tool_calls` to `out`; False when `entries` is
        not a list (not tool calls at all). Raises ToolCallError."""
        if entries is None:
            return False
        if not isinstance(entries, list):
            raise ToolCallError("upstream_malformed")  # calls in a shape no provider sends
        for entry in entries:
            if not isinstance(entry, dict):
                raise ToolCallError("upstream_malformed")
            self._entry(entry, out)
        return True

    def finish(self, out: list[ToolEvent]) -> None:
        """Completes the open call, if any: the model said it is done, or the stream ended."""
        call = self._open
        if call is not None:
            self._open = None
            arguments = "".join(call.arguments)
            call.arguments = []
            value, error = parsed_input(arguments)
            out.append(ToolCall(index=call.index, id=call.id, name=call.name, arguments=arguments, input=value, input_error=error))

    def _entry(self, entry: dict[str, Any], out: list[ToolEvent]) -> None:
        function = entry.get("function")
        if not isinstance(function, dict):
            function = entry  # the flat native shape: {"name", "arguments"}
        name = function.get("name")
        arguments = _arguments_text(function.get("arguments"))
        raw_id = entry.get("id")
        index = entry.get("index")
        if not (isinstance(index, int) and not isinstance(index, bool)):
            index = None
        if arguments is None:
            raise ToolCallError("upstream_malformed")
        if raw_id in (None, "") and name in (None, ""):
            if not arguments:
                if index is None or "id" in entry:
                    # vLLM's finalization entry between calls (all nulls, with or without an
                    # index): the call before it is done. A bare `{"index": 0}` is no news.
                    self.finish(out)
                return
            self._fragment(index, arguments, out)
            return
        open_call = self._open
        if open_call is not None and (index is None or index == open_call.upstream_index):
            if raw_id in (None, "", open_call.id) and name in (None, "", open_call.name) and index is not None:
                # A provider that repeats the id or name on every fragment: the same call.
                self._fragment(index, arguments, out)
                return
        # Another id, or a name without an index: a call of its own, never merged into
        # the one before (some providers send parallel calls all at index 0).
        self.finish(out)
        self._start(raw_id, name, index, out)
        if arguments:
            self._fragment(index, arguments, out)
        if index is None:
            # A native call comes whole in one entry.
            self.finish(out)

    def _start(self, raw_id: object, name: object, index: int | None, out: list[ToolEvent]) -> None:
        checked_name = _identifier(name, MAX_TOOL_NAME_CHARS)
        if checked_name is None:
            raise ToolCallError("upstream_malformed")
        if self._calls >= MAX_TOOL_CALLS:
            raise ToolCallError("tool_calls_too_large")
        ours = self._calls
        call_id = _identifier(raw_id, MAX_TOOL_ID_CHARS) if raw_id not in (None, "") else f"{self._prefix}_{ours}"
        if call_id is None or call_id in self._ids:
            # Two calls of one answer with one id could not both be answered: the result
            # for that id would be ambiguous (and the AI SDK would merge them).
            raise ToolCallError("upstream_malformed")
        self._ids.add(call_id)
        self._calls += 1
        self.fragments += 1
        self._open = _Call(ours, call_id, checked_name, index)
        out.append(ToolCallStart(index=ours, id=call_id, name=checked_name))

    def _fragment(self, index: int | None, arguments: str, out: list[ToolEvent]) -> None:
        call = self._open
        if call is None or (index is not None and index != call.upstream_index):
            # Arguments for a call that never started, or that ended when another began.
            raise ToolCallError("upstream_malformed")
        if not arguments:
            return
        call.chars += len(arguments)
        self._chars += len(arguments)
        if call.chars > MAX_TOOL_CALL_CHARS or self._chars > MAX_TOOL_ARGUMENT_CHARS:
            raise ToolCallError("tool_calls_too_large")
        call.arguments.append(arguments)
        self.fragments += 1
        out.append(ToolCallDelta(index=call.index, arguments=arguments))

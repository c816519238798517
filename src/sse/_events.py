"""Value objects that cross the package's API: parsed events, the answer's parts, tool
calls, statistics.

Frozen, keyword-only dataclasses in the manner of h11's events: they are cheap to compare
in tests and cannot be half-built or changed after the fact.

The vocabulary every encoder is written in (an Encoder method for each): an answer is a
sequence of parts (`Part`: a run of text, a run of reasoning, or one tool call), each
started once and ended once, by the core (sse._parts), never by an encoder; between its
start and its end a text part gets text deltas, a reasoning part reasoning deltas, and a
call part its `ToolCallDelta`s and then its `ToolCall` when its input is whole. After the
parts comes one terminal: `done` with the `ReframerStats` (finish reason, usage, skipped
frames), or `error` with a code.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

__all__ = ["Event", "Part", "PartEnding", "PartKind", "ReframerStats", "ToolCall", "ToolCallDelta", "ToolCallStart"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Event:
    """One dispatched event of an event stream.

    `type` is the `event` field, or "message" when there was none (or it was empty).
    `data` is the `data` lines joined with "\\n". `id` is the last event ID in effect when
    the event was dispatched: per the spec it carries over from earlier events.
    """

    type: str = "message"
    data: str
    id: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallStart:
    """A tool call begins: `index` counts calls of this answer from 0; `id` is the
    upstream's (kept for the round trip) or, where it sent none, one made up for it."""

    index: int
    id: str
    name: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallDelta:
    """A piece of a call's arguments (JSON text; the pieces joined are the whole)."""

    index: int
    arguments: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCall:
    """A whole call. `input` is its arguments parsed, when they are a JSON object;
    otherwise None, and `input_error` says why."""

    index: int
    id: str
    name: str
    arguments: str
    input: dict[str, Any] | None
    input_error: str | None = None


class PartKind(enum.Enum):
    TEXT = "text"
    REASONING = "reasoning"
    TOOL_CALL = "tool_call"


class PartEnding(enum.Enum):
    """How a part ended: WHOLE (the model went on, or the answer is complete), CUT (the
    answer was cut off in it: the token budget, a filter) or FAILED (the answer failed)."""

    WHOLE = "whole"
    CUT = "cut"
    FAILED = "failed"


@dataclass(frozen=True, kw_only=True, slots=True)
class Part:
    """One part of an answer. `number` is its place among the answer's parts, from 0 (a
    Responses output item's index); `call` is a tool call part's start, None otherwise."""

    kind: PartKind
    number: int
    call: ToolCallStart | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ReframerStats:
    """What a `Reframer` has seen and emitted so far.

    `deltas`/`chars` count `delta` events and their text (in code points);
    `reasoning_deltas`/`reasoning_chars` the same for `reasoning` events. `skipped` counts
    upstream events that were not valid JSON, had an unknown shape, or had an event type
    other than "message". `tool_calls` counts the tool calls the model made.
    """

    deltas: int
    chars: int
    reasoning_deltas: int
    reasoning_chars: int
    skipped: int
    tool_calls: int
    finish_reason: str | None
    usage: dict[str, int] | None
    stop_sequence: str | None = None  # the stop sequence the answer ended before, if one did

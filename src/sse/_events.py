"""Value objects that cross the package's API: parsed events, tool calls, statistics.

Frozen, keyword-only dataclasses in the manner of h11's events: they are cheap to compare
in tests and cannot be half-built or changed after the fact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Event", "ReframerStats", "ToolCall", "ToolCallDelta", "ToolCallStart"]


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

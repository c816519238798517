"""Resumable answers: the events of one answer, numbered once, written again for any reader.

A resumable answer is re-framed once, by a Reframer with an event-stream encoder. Its
output is read back into events (`EventNumberer`), which get ids from 1 in order and are
stored; keep-alive comments are not events and get no id. A reader then receives the
stored events from any id on, in its own encoding and each with its id (`ReplayWriter`),
so two readers of one answer see the same events with the same ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Literal

from ._parser import EventStreamParser
from ._receivebuffer import DEFAULT_MAX_EVENT_CHARS, DEFAULT_MAX_LINE_BYTES
from ._tool_calls import MAX_TOOL_FRAME_BYTES

__all__ = ["MAX_EVENT_ID_DIGITS", "EventNumberer", "ReplayWriter", "StoredEvent", "parse_event_id"]

# Ids are counted from 1 and stay far below 2**53, where JavaScript numbers stop being
# exact; a longer Last-Event-ID is not one this Worker gave out.
MAX_EVENT_ID_DIGITS = 15

ReplayFormat = Literal["sse", "ndjson", "ui"]
# How much longer than the upstream event our frame of it may be, at most: the text keeps
# its length or gets shorter (escapes of non-ASCII are written as the characters), and
# the frame adds under 100 characters of its own.
OWN_FRAME_GROWTH = 2


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredEvent:
    """One event of a resumable answer: `type` and `data` as the encoder wrote them."""

    id: int
    type: str
    data: str


def parse_event_id(value: str) -> int:
    """The id in a Last-Event-ID value (decimal digits, 0 for "before the first event").
    Raises ValueError for anything else."""
    text = value.strip(" \t")
    if not text or len(text) > MAX_EVENT_ID_DIGITS or not text.isascii() or not text.isdigit():
        raise ValueError("an event id is a decimal integer of at most 15 digits")
    return int(text)


class EventNumberer:
    """Reads the frames a Reframer writes with an event-stream encoder and numbers each
    event; pings and other comments are dropped. Frames are complete when the Reframer
    returns them, so nothing is held across calls."""

    def __init__(self, last_id: int = 0, *, max_event_bytes: int = 0) -> None:
        # Our own frames, not upstream input: one upstream event at its caps becomes a
        # frame a little longer (the JSON around the text, the padding), so these caps
        # are the upstream's with room for that, or a whole tool call's frame, if longer,
        # or `max_event_bytes` if it is larger still (a stored response's whole output).
        self._parser = EventStreamParser(
            max_line_bytes=max(OWN_FRAME_GROWTH * DEFAULT_MAX_LINE_BYTES, MAX_TOOL_FRAME_BYTES, max_event_bytes),
            max_event_chars=max(OWN_FRAME_GROWTH * DEFAULT_MAX_EVENT_CHARS, MAX_TOOL_FRAME_BYTES, max_event_bytes),
        )
        self._last_id = last_id

    def number(self, frames: bytes) -> list[StoredEvent]:
        events = []
        for event in self._parser.feed(frames):
            self._last_id += 1
            events.append(StoredEvent(id=self._last_id, type=event.type, data=event.data))
        return events


class ReplayWriter:
    """Writes stored events for one reader.

    "sse": the protocol's named events with an `id:` line; "ndjson": the same events as
    JSON lines, the id in an `id` member next to `type`; "ui": the AI SDK's data-only
    frames with an `id:` line. `data` is always one line of JSON (or `[DONE]`) here.
    """

    def __init__(self, format: ReplayFormat) -> None:
        self.format = format

    def write(self, events: list[StoredEvent]) -> str:
        if self.format == "ndjson":
            return "".join([_ndjson_line(event) for event in events])
        if self.format == "ui":
            return "".join([f"id: {event.id}\ndata: {event.data}\n\n" for event in events])
        return "".join([f"event: {event.type}\nid: {event.id}\ndata: {event.data}\n\n" for event in events])

    def ping(self) -> str:
        return '{"type":"ping"}\n' if self.format == "ndjson" else ": ping\n\n"


def _ndjson_line(event: StoredEvent) -> str:
    # The protocol's event data is a JSON object: `type` and `id` go in front of its
    # members, spliced as text rather than parsed and dumped again for every reader.
    if not event.data.startswith("{"):
        return f'{{"type":"{event.type}","id":{event.id},"data":{encode_basestring(event.data)}}}\n'
    body = event.data[1:].lstrip(" ")
    separator = "" if body.startswith("}") else ","
    return f'{{"type":"{event.type}","id":{event.id}{separator}{body}\n'

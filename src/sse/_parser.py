"""Incremental event-stream parser (WHATWG HTML, "9.2.6 Event stream interpretation").

Sans-IO: bytes go in through `feed`, events come out; the parser never reads or writes
anything itself. It is two steps: the ReceiveBuffer turns bytes into blocks of whole
events, and the EventReader interprets a block's lines.
"""

from __future__ import annotations

from ._events import Event
from ._receivebuffer import DEFAULT_MAX_EVENT_CHARS, DEFAULT_MAX_LINE_BYTES, ReceiveBuffer

__all__ = ["DEFAULT_MAX_EVENT_CHARS", "DEFAULT_MAX_LINE_BYTES", "EventReader", "EventStreamParser"]

# (type, data, id): what the reader dispatches. A plain tuple, because the Reframer
# consumes these on its hot path and never needs the dataclass.
RawEvent = tuple[str, str, str]

_MAX_RETRY_DIGITS = 16  # 2**53 has 16


class EventReader:
    """Interprets blocks of whole events (LF line ends, ending with a blank line, as the
    ReceiveBuffer hands them out). Only `id` and `retry` outlast a block, as the spec
    says: the last event ID and the reconnection time carry over from event to event."""

    def __init__(self) -> None:
        self.last_event_id = ""
        """The last event ID buffer: the value of the last `id` field without NUL."""
        self.retry: int | None = None
        """The reconnection time in milliseconds from the last valid `retry` field."""
        self.stray_boms = 0
        """Lines that began with U+FEFF, ignored as the spec says (a field named
        "\ufeffdata" is no field it knows; only the stream's first BOM is stripped), and
        counted: such a line is a frame that a splice of two streams left unreadable."""
        self.stray_bom_events: list[int] = []
        """For each such line of the last block read, how many of its events had been
        dispatched before it: a reader that stops at an event can tell which count."""

    def read(self, block: str) -> list[RawEvent]:
        """The events of `block`, in order."""
        events: list[RawEvent] = []
        data: list[str] = []
        event_type = ""
        self.stray_bom_events = []
        for line in block.split("\n"):
            if not line:
                # A blank line dispatches, but only an event that had data: "If the data
                # buffer is an empty string, set the data buffer and the event type
                # buffer to the empty string and return."
                if data:
                    events.append(
                        (
                            event_type or "message",
                            data[0] if len(data) == 1 else "\n".join(data),
                            self.last_event_id,
                        )
                    )
                    data = []
                event_type = ""
            elif line.startswith("data: "):
                # The overwhelmingly common line, ahead of the general field split.
                data.append(line[6:])
            else:
                colon = line.find(":")
                if colon == 0:
                    continue  # a comment
                if line[0] == "\ufeff":
                    self.stray_boms += 1
                    self.stray_bom_events.append(len(events))
                if colon < 0:
                    field, value = line, ""
                else:
                    field = line[:colon]
                    start = colon + 2 if line.startswith(" ", colon + 1) else colon + 1
                    value = line[start:]
                if field == "data":
                    data.append(value)
                elif field == "event":
                    event_type = value
                elif field == "id":
                    if "\0" not in value:
                        self.last_event_id = value
                elif field == "retry":
                    # Bounded: int() refuses thousands of digits, and no reconnection
                    # time needs more than 2**53 milliseconds anyway.
                    if value.isascii() and value.isdigit() and len(value) <= _MAX_RETRY_DIGITS:
                        self.retry = int(value)
                # Any other field name is ignored, as the spec says.
        return events


class EventStreamParser:
    """Turns the bytes of a `text/event-stream` into `Event` objects.

    Follows the WHATWG event stream interpretation: LF, CR and CRLF line ends (also a CR
    ending one chunk and an LF starting the next), one leading BOM stripped, comment lines,
    `field:value` / `field: value` / a bare `field`, multi-line `data`, `event`, `id`
    (ignored when it contains NUL) and `retry` (ASCII digits only). An event is dispatched
    at a blank line and only if some `data` line was seen; an unterminated event at the end
    of input is discarded. Bytes are decoded as UTF-8 incrementally, so a character split
    across chunks survives, and invalid bytes become U+FFFD.
    """

    def __init__(
        self,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_event_chars: int = DEFAULT_MAX_EVENT_CHARS,
    ) -> None:
        """`max_line_bytes` caps one line (UTF-8 bytes, without its line end).
        `max_event_chars` caps one event: the code points from the start of its first
        line to the end of its last, line ends between them included.

        Raises ValueError if either is less than 1.
        """
        self._buffer = ReceiveBuffer(max_line_bytes=max_line_bytes, max_event_chars=max_event_chars)
        self._reader = EventReader()

    @property
    def last_event_id(self) -> str:
        """The last event ID buffer: the value of the last `id` field without NUL. While
        the stream runs it reflects the events handed out so far; `close()` adds the
        lines of an event that never ended (and `retry` likewise)."""
        return self._reader.last_event_id

    @property
    def retry(self) -> int | None:
        """The reconnection time in milliseconds from the last valid `retry` field."""
        return self._reader.retry

    @property
    def stray_boms(self) -> int:
        """Lines so far that began with U+FEFF after the stream's start (ignored)."""
        return self._reader.stray_boms

    def feed(self, chunk: bytes) -> list[Event]:
        """Parses one chunk of the stream and returns the events it completed.

        Raises LineTooLongError when a line is longer than its cap, EventTooLargeError
        when an event is larger than its cap (either way the events completed before are
        on the error's `events`), and StreamClosedError after `close()` or after either
        of those errors.
        """
        block = self._buffer.feed(chunk)
        events = [Event(type=t, data=d, id=i) for t, d, i in self._reader.read(block)] if block else []
        error = self._buffer.error
        if error is not None:
            error.events = tuple(events)
            raise error
        return events

    def close(self) -> None:
        """Ends the input. Per the spec, an event not yet dispatched is discarded.

        Calling it twice is harmless; `feed` afterwards raises StreamClosedError.
        """
        # The discarded event's `id` and `retry` lines still take effect.
        self._reader.read(self._buffer.close())

"""Incremental event-stream parser (WHATWG HTML, "9.2.6 Event stream interpretation").

Sans-IO: bytes go in through `feed`, events come out; the parser never reads or writes
anything itself.
"""

from __future__ import annotations

from codecs import utf_8_decode

from ._errors import EventTooLargeError, LineTooLongError, StreamClosedError
from ._events import Event

__all__ = ["DEFAULT_MAX_EVENT_CHARS", "DEFAULT_MAX_LINE_BYTES", "EventStreamParser"]

DEFAULT_MAX_LINE_BYTES = 1 << 20
# A model frame is a token or a usage record: well under a kilobyte. The cap bounds what
# one event may hold however its data is split into lines (a stream of `data:` lines
# with no blank line would otherwise grow without end).
DEFAULT_MAX_EVENT_CHARS = 1 << 18

# A pending line that trickles in a byte a chunk is kept as one fragment per chunk; each
# fragment costs some fifty bytes of object header. The fragments are joined into one
# whenever there are more than this many plus one per 64 bytes held: the memory stays
# within about twice the line's length and the joining cost linear overall.
_FRAGMENTS_FLOOR = 16
_BYTES_PER_FRAGMENT = 64

# (type, data, id): what the line engine dispatches. A plain tuple, because the Reframer
# consumes these on its hot path and never needs the dataclass.
RawEvent = tuple[str, str, str]


def _utf8_len(text: str) -> int:
    # str.isascii() is O(1) in CPython (a flag on the object), so the common case never
    # re-encodes anything. Decoded text holds no surrogates: invalid bytes became U+FFFD.
    return len(text) if text.isascii() else len(text.encode("utf-8"))


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
        `max_event_chars` caps the data of one event: each of its `data` lines counts
        the code points of its value plus one.

        Raises ValueError if either is less than 1.
        """
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be at least 1")
        if max_event_chars < 1:
            raise ValueError("max_event_chars must be at least 1")
        self._max_line_bytes = max_line_bytes
        self._max_event_chars = max_event_chars
        self._over_limit: LineTooLongError | EventTooLargeError | None = None
        # A line of n code points is at most 4n UTF-8 bytes, so text no longer than this
        # many code points cannot hold a line over the cap and needs no exact count.
        self._safe_chars = max_line_bytes // 4
        # The bytes of a character split across chunks, kept for the next chunk.
        self._undecoded = b""
        self._at_start = True
        self._skip_lf = False
        self._closed = False
        # The unterminated line, as fragments joined once when its line end arrives, so a
        # line that trickles in byte by byte costs linear, not quadratic, time.
        self._pending: list[str] = []
        self._pending_bytes = 0
        self._data: list[str] = []
        # The event's data size so far: the values' code points plus one per line.
        self._data_chars = 0
        self._type = ""
        self._last_event_id = ""
        self._retry: int | None = None

    @property
    def last_event_id(self) -> str:
        """The last event ID buffer: the value of the last `id` field without NUL."""
        return self._last_event_id

    @property
    def retry(self) -> int | None:
        """The reconnection time in milliseconds from the last valid `retry` field."""
        return self._retry

    def feed(self, chunk: bytes) -> list[Event]:
        """Parses one chunk of the stream and returns the events it completed.

        Raises LineTooLongError when a line is longer than its cap, EventTooLargeError
        when an event's data is larger than its cap (either way the events completed
        before are on the error's `events`), and StreamClosedError after `close()` or
        after either of those errors.
        """
        text = self._decode_lf(chunk)
        if not text:
            return []
        raw, overflow = self._interpret(text)
        events = [Event(type=t, data=d, id=i) for t, d, i in raw]
        if overflow:
            assert self._over_limit is not None
            self._over_limit.events = tuple(events)
            raise self._over_limit
        return events

    def close(self) -> None:
        """Ends the input. Per the spec, an event not yet dispatched is discarded.

        Calling it twice is harmless; `feed` afterwards raises StreamClosedError.
        """
        self._closed = True
        self._undecoded = b""
        self._pending = []
        self._pending_bytes = 0
        self._data = []
        self._data_chars = 0
        self._type = ""

    # The engine in two steps, so that the Reframer can decode a chunk, read a run of
    # whole events itself, and hand everything else to `_interpret`.

    def _decode_lf(self, chunk: bytes) -> str:
        """Decodes a chunk, drops the BOM, and turns every line end into one LF."""
        if self._closed:
            raise StreamClosedError("feed() after the event stream was closed")
        if self._undecoded:
            chunk = self._undecoded + chunk
        # errors="replace": invalid bytes become U+FFFD, never an exception. final=False
        # leaves an incomplete trailing character undecoded instead of replacing it.
        text, used = utf_8_decode(chunk, "replace", False)
        # bytes() because a chunk may be a memoryview over a buffer its owner reuses.
        self._undecoded = bytes(chunk[used:]) if used < len(chunk) else b""
        if not text:
            return ""
        if self._at_start:
            self._at_start = False
            # "One leading U+FEFF BYTE ORDER MARK character must be ignored if any are
            # present." Checked on the first decoded text, since the BOM's three bytes
            # may arrive in different chunks.
            if text[0] == "\ufeff":
                text = text[1:]
                if not text:
                    return ""
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
                if not text:
                    return ""
        if "\r" in text:
            # A CR at the very end may be the first half of a CRLF split across chunks.
            self._skip_lf = text[-1] == "\r"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        return text

    def _interpret(self, text: str) -> tuple[list[RawEvent], bool]:
        """Interprets LF-only text: returns the dispatched events and whether a line went
        over the cap (which closes the parser: the stream can no longer be framed)."""
        lines = text.split("\n")
        tail = lines.pop()
        if not lines:
            pending = self._pending
            pending.append(tail)
            self._pending_bytes += _utf8_len(tail)
            if self._pending_bytes > self._max_line_bytes:
                self._overflow(LineTooLongError(self._max_line_bytes))
                return [], True
            if len(pending) > _FRAGMENTS_FLOOR + self._pending_bytes // _BYTES_PER_FRAGMENT:
                self._pending = ["".join(pending)]
            return [], False

        overflow = False
        if self._pending:
            self._pending.append(lines[0])
            lines[0] = "".join(self._pending)
            self._pending = []
        if len(text) > self._safe_chars or len(lines[0]) > self._safe_chars:
            # Rare: the text or the completed line is long enough to be over the cap.
            limit = self._max_line_bytes
            for index, line in enumerate(lines):
                if _utf8_len(line) > limit:
                    del lines[index:]
                    overflow = True
                    break
            else:
                overflow = _utf8_len(tail) > limit
        if tail and not overflow:
            self._pending.append(tail)
            self._pending_bytes = _utf8_len(tail)
        else:
            self._pending_bytes = 0

        events: list[RawEvent] = []
        data = self._data
        data_chars = self._data_chars
        max_event_chars = self._max_event_chars
        event_type = self._type
        for line in lines:
            if not line:
                # A blank line dispatches, but only an event that had data: "If the data
                # buffer is an empty string, set the data buffer and the event type
                # buffer to the empty string and return."
                if data:
                    if data_chars > max_event_chars:
                        break
                    events.append(
                        (
                            event_type or "message",
                            data[0] if len(data) == 1 else "\n".join(data),
                            self._last_event_id,
                        )
                    )
                    data.clear()
                    data_chars = 0
                event_type = ""
            elif line.startswith("data: "):
                # The overwhelmingly common line, ahead of the general field split.
                data.append(line[6:])
                data_chars += len(line) - 5
            else:
                colon = line.find(":")
                if colon == 0:
                    continue  # a comment
                if colon < 0:
                    field, value = line, ""
                else:
                    field = line[:colon]
                    start = colon + 2 if line.startswith(" ", colon + 1) else colon + 1
                    value = line[start:]
                if field == "data":
                    data.append(value)
                    data_chars += len(value) + 1
                elif field == "event":
                    event_type = value
                elif field == "id":
                    if "\0" not in value:
                        self._last_event_id = value
                elif field == "retry":
                    if value.isascii() and value.isdigit():
                        self._retry = int(value)
                # Any other field name is ignored, as the spec says.
        self._type = event_type
        self._data_chars = data_chars
        if data_chars > max_event_chars:
            # Checked at each dispatch and once here, not per line: the lines of one
            # call are slices of text already in memory, so the cap holds within a call.
            self._overflow(EventTooLargeError(max_event_chars))
            overflow = True
        elif overflow:
            self._overflow(LineTooLongError(self._max_line_bytes))
        return events, overflow

    def _overflow(self, error: LineTooLongError | EventTooLargeError) -> None:
        self._over_limit = error
        self.close()

"""The receive buffer: the one owner of upstream text that has not been handed out yet.

Bytes go in; text comes out only in blocks that end at a blank line, so whoever reads a
block starts and ends at event boundaries and keeps nothing between blocks. Everything
else about raw input lives here: incremental UTF-8 decoding, the byte order mark, the
three kinds of line end, and the caps that bound what an upstream can make it hold.
"""

from __future__ import annotations

from codecs import utf_8_decode

from ._errors import EventTooLargeError, LineTooLongError, StreamClosedError

__all__ = ["DEFAULT_MAX_EVENT_CHARS", "DEFAULT_MAX_LINE_BYTES", "ReceiveBuffer"]

DEFAULT_MAX_LINE_BYTES = 1 << 18
# A model frame is a token or a usage record: well under a kilobyte. The cap bounds what
# one event may hold however it is split into lines (a stream of `data:` lines with no
# blank line would otherwise grow without end).
DEFAULT_MAX_EVENT_CHARS = 1 << 18

# Held text that trickles in a byte a chunk is kept as one fragment per chunk, and each
# fragment costs some fifty bytes of object header. The fragments are joined into one
# whenever there are more than this many plus one per 64 characters held: memory stays
# within about twice the text's length and the joining cost linear overall.
_FRAGMENTS_FLOOR = 16
_CHARS_PER_FRAGMENT = 64


def utf8_len(text: str) -> int:
    # str.isascii() is O(1) in CPython (a flag on the object), so the common case never
    # re-encodes anything. Decoded text holds no surrogates: invalid bytes became U+FFFD.
    return len(text) if text.isascii() else len(text.encode("utf-8"))


class ReceiveBuffer:
    """Decodes an event stream's bytes and hands them out as blocks of whole events.

    A line is at most `max_line_bytes` UTF-8 bytes (its line end not counted; an invalid
    byte counts as the three bytes of U+FFFD). An event, the text from its first line to
    the end of its last one (line ends inside it counted), is at most `max_event_chars`
    code points. Both are measured on the decoded text, so where the input happens to be
    split never changes the outcome.
    """

    def __init__(self, *, max_line_bytes: int, max_event_chars: int) -> None:
        """Raises ValueError if either cap is less than 1."""
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be at least 1")
        if max_event_chars < 1:
            raise ValueError("max_event_chars must be at least 1")
        self._max_line_bytes = max_line_bytes
        self._max_event_chars = max_event_chars
        # A line of n code points is at most 4n UTF-8 bytes, so text no longer than this
        # can hold neither a line nor an event over its cap, and needs no exact count.
        self.safe_chars = min(max_line_bytes // 4, max_event_chars)
        # The bytes of a character split across chunks, kept for the next chunk.
        self._undecoded = b""
        self._at_start = True
        self._skip_lf = False
        # The text after the last blank line, as fragments joined once when its event
        # completes. It never contains a blank line.
        self._held: list[str] = []
        self._held_chars = 0
        self._held_ends_lf = False
        self._line_bytes = 0  # UTF-8 bytes of the held text's unterminated last line
        self._closed = False
        self.between_events = False
        """True when nothing is held and the next text starts a new event (the stream's
        start, where a BOM may come, excepted): a whole event may then be read alone."""
        self.error: LineTooLongError | EventTooLargeError | None = None
        """Set once a cap was passed; the buffer is closed from then on."""

    def feed(self, chunk: bytes) -> str:
        """`feed_text` of the text `chunk`'s bytes complete (see `decode`)."""
        return self.feed_text(self.decode(chunk))

    def decode(self, chunk: bytes) -> str:
        """The text of the characters `chunk` completes: invalid bytes become U+FFFD, and
        a character split across chunks waits for the rest. For a caller that has bytes;
        one that has text (decoded once, by the runtime) gives it to `feed_text`.
        Raises StreamClosedError on a closed buffer."""
        if self._closed:
            raise StreamClosedError("feed() after the event stream was closed")
        if self._undecoded:
            chunk = self._undecoded + chunk
        # errors="replace": invalid bytes become U+FFFD, never an exception. final=False
        # leaves an incomplete trailing character undecoded instead of replacing it.
        text, used = utf_8_decode(chunk, "replace", False)
        # bytes() because a chunk may be a memoryview over a buffer its owner reuses.
        self._undecoded = bytes(chunk[used:]) if used < len(chunk) else b""
        return text

    def feed_text(self, text: str) -> str:
        """The text of the events `text` completes, with LF line ends: everything up to
        and including the last blank line, or "" when no event was completed.

        When the input passes a cap, the events before the offending one are returned,
        `error` is set and the buffer closes. Raises StreamClosedError on a closed buffer.
        """
        text = self._normalize(text)
        if not text:
            return ""
        last = text.rfind("\n\n")
        if last >= 0:
            cut = last + 2
        elif self._held_ends_lf and text[0] == "\n":
            cut = 1  # the held text's last line end and this one make the blank line
        else:
            self._hold(text)
            return ""
        held = self._held
        if held:
            held.append(text[:cut])
            block = "".join(held)
        else:
            block = text[:cut]
        self._held = []
        self._held_chars = 0
        self._held_ends_lf = False
        self._line_bytes = 0
        if len(block) > self.safe_chars:
            block = self._within_caps(block)
            if self.error is not None:
                return block
        self._hold(text[cut:])
        self.between_events = not self._held and not self._skip_lf and not self._closed
        return block

    def close(self) -> str:
        """Ends the input. An unterminated event is discarded, as the spec says, but its
        complete lines are returned: they dispatch nothing, yet fields that take effect
        where they stand (`id`, `retry`) still count. Calling it twice is harmless."""
        held = "".join(self._held) if self.error is None else ""
        self._closed = True
        self.between_events = False
        self._undecoded = b""
        self._held = []
        self._held_chars = 0
        return held[: held.rfind("\n") + 1]

    def discard(self) -> None:
        """Drops everything held, at once and without joining it first, and closes."""
        self._closed = True
        self.between_events = False
        self._undecoded = b""
        self._held = []
        self._held_chars = 0

    def _normalize(self, text: str) -> str:
        """Drops the stream's BOM and turns every line end into one LF."""
        if self._closed:
            raise StreamClosedError("feed() after the event stream was closed")
        if not text:
            return ""
        self.between_events = False
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

    def _hold(self, text: str) -> None:
        """Keeps `text`, which holds no blank line, as part of the unfinished event."""
        if not text:
            return
        newline = text.rfind("\n")
        if newline < 0:
            self._line_bytes += utf8_len(text)
            over_line = self._line_bytes > self._max_line_bytes
        else:
            first = text.find("\n")
            over_line = self._line_bytes + utf8_len(text[:first]) > self._max_line_bytes
            if not over_line and len(text) > self.safe_chars:
                over_line = any(
                    utf8_len(line) > self._max_line_bytes for line in text[first:].split("\n")
                )
            self._line_bytes = utf8_len(text[newline + 1 :])
            over_line = over_line or self._line_bytes > self._max_line_bytes
        held = self._held
        held.append(text)
        self._held_chars += len(text)
        self._held_ends_lf = text[-1] == "\n"
        if over_line:
            self._fail(LineTooLongError(self._max_line_bytes))
        elif self._held_chars - self._held_ends_lf > self._max_event_chars:
            self._fail(EventTooLargeError(self._max_event_chars))
        elif len(held) > _FRAGMENTS_FLOOR + self._held_chars // _CHARS_PER_FRAGMENT:
            self._held = ["".join(held)]

    def _within_caps(self, block: str) -> str:
        """`block` up to the event that passes a cap (and `error` set), or all of it."""
        limit = self._max_line_bytes
        position = 0
        offending = -1
        for line in block.split("\n"):
            if len(line) * 4 > limit and utf8_len(line) > limit:
                offending = position
                error: LineTooLongError | EventTooLargeError = LineTooLongError(limit)
                break
            position += len(line) + 1
        position = 0
        for event in block.split("\n\n"):
            if offending >= 0 and position >= offending:
                break
            if len(event) > self._max_event_chars:
                offending = position
                error = EventTooLargeError(self._max_event_chars)
                break
            position += len(event) + 2
        if offending < 0:
            return block
        self._fail(error)
        end = block.rfind("\n\n", 0, offending)
        return block[: end + 2] if end >= 0 else ""

    def _fail(self, error: LineTooLongError | EventTooLargeError) -> None:
        self.error = error
        self.close()

"""Numbering an answer's frames as they come out of the relay, once per chunk: the same
events, ids and errors as EventNumberer, with a fast path for the chunks this package's
encoders write, so that the commonest chunk is not parsed line by line a second time.
tests/chat/test_resumable_live.py checks it against EventNumberer."""

from __future__ import annotations

from ._replay import EventNumberer, StoredEvent

__all__ = ["FAST_PATH_MAX_CHARS", "FrameNumberer"]

# Larger chunks take the general path, whose line and event caps (at least 256 Ki
# characters, above) a chunk this short can never reach.
FAST_PATH_MAX_CHARS = 64 * 1024


class FrameNumberer:
    """Turns the relay's output, one chunk at a time (text or UTF-8 bytes), into the
    answer's events numbered from `last_id + 1`. Keep-alive comments are not events.

    Raises what EventNumberer raises (sse.SSEError) for a frame over its caps."""

    def __init__(self, last_id: int = 0, *, max_event_bytes: int = 0) -> None:
        self.last_id = last_id
        self._max_event_bytes = max_event_bytes  # EventNumberer's
        # The general numberer, while a chunk has left a frame unfinished (or for every
        # chunk not in our encoders' shape); None at a frame boundary.
        self._general: EventNumberer | None = None
        self._started = False

    def number(self, chunk: str | bytes) -> list[StoredEvent]:
        if self._general is None:
            text = chunk if isinstance(chunk, str) else _utf8(chunk)
            if text is not None and (events := self._fast(text)) is not None:
                self._started = True
                return events
        return self._number_in_general(chunk)

    def _fast(self, text: str) -> list[StoredEvent] | None:
        """The events of `text` if it is whole frames of the shape our encoders write
        (`event: T` and `data: D` lines, or a `data: D` line alone, or a comment, each
        ending with a blank line; LF only); None for anything else."""
        if len(text) > FAST_PATH_MAX_CHARS or not text.endswith("\n\n") or "\r" in text:
            return None
        events: list[StoredEvent] = []
        last_id = self.last_id
        for block in text[:-2].split("\n\n"):
            if block.startswith("data: "):
                kind, data = "message", block[6:]
            elif block.startswith("event: "):
                head, found, data = block.partition("\ndata: ")
                kind = head[7:]
                if not found or not kind or "\n" in kind:
                    return None
            elif block.startswith(":") and "\n" not in block:
                continue  # a keep-alive comment
            else:
                return None
            if "\n" in data:
                return None
            last_id += 1
            events.append(StoredEvent(id=last_id, type=kind, data=data))
        self.last_id = last_id
        return events

    def _number_in_general(self, chunk: str | bytes) -> list[StoredEvent]:
        general = self._general
        if general is None:
            general = self._general = EventNumberer(last_id=self.last_id, max_event_bytes=self._max_event_bytes)
            if self._started:
                # Not the stream's start: a byte-order mark is stripped only there, and a
                # blank line (which dispatches nothing) is what tells the parser so.
                general.number(b"\n")
        self._started = True
        data = chunk.encode() if isinstance(chunk, str) else chunk
        events = general.number(data)
        if events:
            self.last_id = events[-1].id
        if data.endswith(b"\n\n"):
            self._general = None  # a frame boundary: the parser holds nothing now
        return events


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None  # a character split across chunks, or not UTF-8: the general path decodes it

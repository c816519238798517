"""The error hierarchy of the SSE core.

One base, so a caller can catch everything this package raises with one clause, and a
subclass per thing a caller reacts to differently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._events import Event

__all__ = [
    "EventTooLargeError",
    "LineTooLongError",
    "SSEError",
    "StreamClosedError",
]


class SSEError(Exception):
    """Base class of every error raised by the `sse` package."""


class LineTooLongError(SSEError):
    """An event-stream line grew past the parser's cap.

    The line's length is counted in UTF-8 bytes after decoding (an invalid byte counts as
    the three bytes of U+FFFD), so where the input happens to be split never changes the
    outcome. `events` holds the events that were completed earlier in the same `feed`
    call, so that nothing before the offending line is lost.
    """

    def __init__(self, limit: int, events: tuple[Event, ...] = ()) -> None:
        super().__init__(f"event-stream line longer than {limit} bytes")
        self.limit = limit
        self.events = events


class EventTooLargeError(SSEError):
    """The data of one event grew past the parser's cap (many `data:` lines and no blank
    line to end them). `events` holds the events completed earlier in the same `feed`
    call, as for LineTooLongError."""

    def __init__(self, limit: int, events: tuple[Event, ...] = ()) -> None:
        super().__init__(f"event-stream event with more than {limit} characters of data")
        self.limit = limit
        self.events = events


class StreamClosedError(SSEError):
    """`feed` was called after `close()`, or after a `LineTooLongError` or
    `EventTooLargeError`."""

"""What the answer being made keeps in memory, as plain Python: the events numbered but
not yet written (`WriteBatch`), its newest stored events (`LiveTail`) for readers close
behind it, and the rule for pushing each batch straight to a reader that has all the
others (`takes_push`). Storage serves everyone else: a reader further behind, any reader
of a finished answer, every reader after the object restarted (it remembers nothing)."""

from __future__ import annotations

from collections import deque
from itertools import islice

from sse import StoredEvent

# What a reader gets per pull at most, from memory or storage: bounds what one page holds.
PAGE_SIZE = 256
PAGE_CHARS = 256 * 1024
# A following reader is pushed every batch while its stream holds at most this many bytes
# not yet read; beyond, it falls back to pulling pages (a slow client holds no more).
MAX_QUEUED_BYTES = 64 * 1024
# At most one write of the answer's events per this many seconds while it streams.
WRITE_INTERVAL_S = 0.05


class WriteBatch:
    """The events numbered since the last write, written together: each write is a commit
    of its own, which costs the object several times what the statement does (and holds
    its output until it is durable). A batch is written at once when the last write is
    `interval_s` old (an answer's first events, a slow model's every event), else when it
    is: so an answer costs at most one commit per interval, and an event waits at most
    that long. Also at once when full (`max_events`, `max_chars`), so it holds no more."""

    def __init__(self, *, interval_s: float = WRITE_INTERVAL_S, max_events: int = PAGE_SIZE, max_chars: int = PAGE_CHARS) -> None:
        self._interval_s = interval_s
        self._max_events = max_events
        self._max_chars = max_chars
        self._events: list[StoredEvent] = []
        self._chars = 0
        self._written_at: float | None = None  # monotonic

    def add(self, events: list[StoredEvent], *, now: float) -> float:
        """Keeps `events` (the next ones, in order). Returns in how many seconds the batch
        is due to be written: 0 or less means now."""
        self._events += events
        self._chars += sum(len(event.data) for event in events)
        if len(self._events) >= self._max_events or self._chars >= self._max_chars or self._written_at is None:
            return 0.0
        return self._written_at + self._interval_s - now

    def take(self, *, now: float) -> list[StoredEvent]:
        """The events kept, in order, being written at `now`; the batch is empty afterwards."""
        events, self._events, self._chars = self._events, [], 0
        if events:
            self._written_at = now
        return events


class LiveTail:
    """The newest events of the answer being made: at most `max_events` events and
    `max_chars` characters of data (the oldest go first). Their ids are consecutive."""

    def __init__(self, *, max_events: int = PAGE_SIZE, max_chars: int = PAGE_CHARS) -> None:
        self._max_events = max_events
        self._max_chars = max_chars
        self._events: deque[StoredEvent] = deque()
        self._chars = 0

    def clear(self) -> None:
        """Nothing is kept: a new answer begins, or the answer ended (storage serves its
        readers from then on)."""
        self._events.clear()
        self._chars = 0

    def append(self, events: list[StoredEvent]) -> None:
        """Events just stored, in order, right after the ones kept."""
        kept = self._events
        if kept and events and events[0].id != kept[-1].id + 1:
            self.clear()  # never a gap: a page from here must be what storage would give
        for event in events:
            kept.append(event)
            self._chars += len(event.data)
        while kept and (len(kept) > self._max_events or self._chars > self._max_chars):
            self._chars -= len(kept.popleft().data)

    def page_after(self, cursor: int) -> list[StoredEvent] | None:
        """The page after event `cursor`, as storage would give it (at most PAGE_SIZE
        events, and no event after PAGE_CHARS characters are reached); None when it is
        not all here: `cursor` is before the oldest event kept, or nothing is kept."""
        kept = self._events
        if not kept or cursor < kept[0].id - 1 or cursor >= kept[-1].id:
            return None
        page: list[StoredEvent] = []
        chars = 0
        for event in islice(kept, cursor + 1 - kept[0].id, None):
            if len(page) == PAGE_SIZE or chars >= PAGE_CHARS:
                break
            page.append(event)
            chars += len(event.data)
        return page


def takes_push(*, reader_serial: int, answer_serial: int, cursor: int, first_id: int, queued_bytes: int) -> bool:
    """Whether a following reader (of answer `reader_serial`, with every event up to
    `cursor`, `queued_bytes` of it not yet read by its client) is pushed the batch that
    starts at `first_id` of answer `answer_serial`. If not, it stops following and pulls
    its pages again: from the tail, or from storage when it fell further behind."""
    return reader_serial == answer_serial and first_id == cursor + 1 and queued_bytes <= MAX_QUEUED_BYTES

"""The answer's storage: the object's SQLite database, through `ctx.storage.sql` (FFI).

`answer` holds one row (answer.AnswerRow); `events` one row per event, numbered from 1.
"""

from __future__ import annotations

from typing import Any

from chat.resumable.answer import AnswerRow
from chat.resumable.formats import AnswerKind
from sse import StoredEvent

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS answer (one INTEGER PRIMARY KEY CHECK (one = 1), kind TEXT NOT NULL,"
    " request_id TEXT NOT NULL, serial INTEGER NOT NULL, live INTEGER NOT NULL, ended_at REAL)",
    "CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, type TEXT NOT NULL, data TEXT NOT NULL)",
)
# What a reader gets per pull at most: bounds what one replay holds in memory at once.
PAGE_SIZE = 256
PAGE_CHARS = 256 * 1024


class AnswerStore:
    def __init__(self, storage: Any) -> None:
        self._storage = storage
        self._sql = storage.sql

    def load(self) -> tuple[AnswerRow | None, int]:
        """The stored row and the last event's id ((None, 0) when nothing is stored)."""
        exists = self._sql.exec("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'answer'").one().n
        if not exists:
            return None, 0
        rows = self._sql.exec("SELECT kind, request_id, serial, live, ended_at FROM answer").toArray()
        if not len(rows):
            return None, 0
        row = rows[0]
        # A NULL column arrives as JS null (pyodide's jsnull), which is not None.
        ended_at = row.ended_at if isinstance(row.ended_at, int | float) else None
        answer = AnswerRow(kind=AnswerKind(str(row.kind)), request_id=str(row.request_id), serial=int(row.serial),
                           live=bool(row.live), ended_at=ended_at)
        return answer, self.last_id()

    def begin(self, row: AnswerRow) -> None:
        """The new answer's row, and no events."""
        for statement in SCHEMA:
            self._sql.exec(statement)
        self._sql.exec("DELETE FROM events")
        self._sql.exec(
            "INSERT OR REPLACE INTO answer (one, kind, request_id, serial, live, ended_at) VALUES (1, ?, ?, ?, 1, NULL)",
            row.kind.value, row.request_id, row.serial,
        )

    def append(self, events: list[StoredEvent]) -> None:
        for event in events:
            self._sql.exec("INSERT INTO events (id, type, data) VALUES (?, ?, ?)", event.id, event.type, event.data)

    def end(self, row: AnswerRow) -> None:
        self._sql.exec("UPDATE answer SET live = 0, ended_at = ?", row.ended_at)

    def last_id(self) -> int:
        return int(self._sql.exec("SELECT coalesce(max(id), 0) AS last FROM events").one().last)

    def size(self) -> tuple[int, int]:
        """(events, bytes of storage): what keeping the answer costs, for the operator."""
        events = int(self._sql.exec("SELECT count(*) AS n FROM events").one().n)
        return events, int(self._sql.databaseSize)

    def events_after(self, after: int) -> list[StoredEvent]:
        # Rows are taken one at a time from the cursor, so a page stops at PAGE_CHARS of
        # data (an event can be 256 Ki characters) without reading the rest.
        events: list[StoredEvent] = []
        chars = 0
        cursor = self._sql.exec("SELECT id, type, data FROM events WHERE id > ? ORDER BY id LIMIT ?", after, PAGE_SIZE)
        while chars < PAGE_CHARS:
            step = cursor.next()
            if step.done:
                break
            row = step.value
            events.append(StoredEvent(id=int(row.id), type=str(row.type), data=str(row.data)))
            chars += len(events[-1].data)
        return events

    async def delete_all(self) -> None:
        await self._storage.deleteAll()

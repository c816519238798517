"""The answer's storage: the object's SQLite database, through `ctx.storage.sql` (FFI).

`answer` holds one row (answer.AnswerRow); `events` one row per event, numbered from 1,
written one statement per batch (a chunk of the relay's output). A stored response of
/v1/responses also has its row in `response` (its head, owner, background flag) and its
input, for a `previous_response_id`, in `response_input`, in parts that fit a row.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from chat.resumable.answer import AnswerRow
from chat.resumable.formats import AnswerKind
from chat.resumable.live import PAGE_CHARS, PAGE_SIZE
from sse import StoredEvent

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS answer (one INTEGER PRIMARY KEY CHECK (one = 1), kind TEXT NOT NULL,"
    " request_id TEXT NOT NULL, serial INTEGER NOT NULL, live INTEGER NOT NULL, ended_at REAL)",
    "CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, type TEXT NOT NULL, data TEXT NOT NULL)",
)
# Tables of their own, so an answer table written before them needs no migration.
RESPONSE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS response (one INTEGER PRIMARY KEY CHECK (one = 1), head TEXT NOT NULL,"
    " owner TEXT NOT NULL, background INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS response_input (part INTEGER PRIMARY KEY, text TEXT NOT NULL)",
)
# A stored input is written in parts of at most this many characters (4 bytes each at most
# in UTF-8: under the 2 MB a string may take).
INPUT_PART_CHARS = 400_000
INSERT_EVENT = "INSERT INTO events (id, type, data) VALUES (?, ?, ?)"
# A batch of events is one statement whatever its length, through one JSON parameter:
# Durable Objects' SQLite allows at most 100 bound parameters per statement, 100 KB of
# statement text, and 2 MB per string or row (developers.cloudflare.com/durable-objects/
# platform/limits/, "SQL storage limits", checked 2026-12-01).
INSERT_BATCH = "INSERT INTO events (id, type, data) SELECT ?1 + key, value ->> 0, value ->> 1 FROM json_each(?2)"
# The JSON of one batch stays under the 2 MB limit with room to spare (UTF-8 bytes); a
# larger batch is split. One event alone always fits a row (its own limit, checked by
# SQLite), so it is written without the JSON.
MAX_BATCH_BYTES = 1_000_000


class AnswerStore:
    def __init__(self, storage: Any) -> None:
        self._storage = storage
        self._sql = storage.sql
        # What the answer's events cost to write, for the operator: statements, and rows
        # written as storage counts them (what Durable Objects bill).
        self.statements = 0
        self.rows_written = 0

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
        if answer.kind is AnswerKind.RESPONSES:
            stored = self._sql.exec("SELECT head, owner, background FROM response").one()
            answer = replace(answer, head=str(stored.head), owner=str(stored.owner), background=bool(stored.background))
        return answer, self.last_id()

    def begin(self, row: AnswerRow, *, input_text: str | None = None) -> None:
        """The new answer's row, and no events; a stored response's row and `input_text`."""
        for statement in SCHEMA:
            self._sql.exec(statement)
        self._sql.exec("DELETE FROM events")
        self.statements = self.rows_written = 0
        self._sql.exec(
            "INSERT OR REPLACE INTO answer (one, kind, request_id, serial, live, ended_at) VALUES (1, ?, ?, ?, 1, NULL)",
            row.kind.value, row.request_id, row.serial,
        )
        if row.kind is AnswerKind.RESPONSES:
            for statement in RESPONSE_SCHEMA:
                self._sql.exec(statement)
            self._sql.exec("INSERT OR REPLACE INTO response (one, head, owner, background) VALUES (1, ?, ?, ?)",
                           row.head or "", row.owner, int(row.background))
            self._sql.exec("DELETE FROM response_input")
            text = input_text or "[]"
            for part, start in enumerate(range(0, len(text), INPUT_PART_CHARS)):
                self._sql.exec("INSERT INTO response_input (part, text) VALUES (?, ?)", part, text[start : start + INPUT_PART_CHARS])

    def input_text(self) -> str:
        """A stored response's input items (JSON), as begin was given them."""
        return "".join([str(row.text) for row in self._sql.exec("SELECT text FROM response_input ORDER BY part").toArray()])

    def last_event(self) -> StoredEvent | None:
        rows = self._sql.exec("SELECT id, type, data FROM events ORDER BY id DESC LIMIT 1").toArray()
        if not len(rows):
            return None
        return StoredEvent(id=int(rows[0].id), type=str(rows[0].type), data=str(rows[0].data))

    def append(self, events: list[StoredEvent]) -> None:
        """Stores `events` (consecutive ids, in order): one statement, unless their text is
        too large for one."""
        if not events:
            return
        if len(events) == 1:
            event = events[0]
            self._write(INSERT_EVENT, event.id, event.type, event.data)
            return
        rows = json.dumps([[event.type, event.data] for event in events], ensure_ascii=False)
        # Characters first: a UTF-8 byte count needs the encoded text, and is rarely needed.
        if len(rows) * 4 <= MAX_BATCH_BYTES or len(rows.encode()) <= MAX_BATCH_BYTES:
            self._write(INSERT_BATCH, events[0].id, rows)
        else:
            half = len(events) // 2
            self.append(events[:half])
            self.append(events[half:])

    def _write(self, statement: str, *values: Any) -> None:
        cursor = self._sql.exec(statement, *values)
        self.statements += 1
        self.rows_written += int(cursor.rowsWritten)

    def end(self, row: AnswerRow) -> None:
        self._sql.exec("UPDATE answer SET live = 0, ended_at = ?", row.ended_at)

    def last_id(self) -> int:
        return int(self._sql.exec("SELECT coalesce(max(id), 0) AS last FROM events").one().last)

    def size(self) -> tuple[int, int]:
        """(events, bytes of storage): what keeping the answer costs, for the operator."""
        events = int(self._sql.exec("SELECT count(*) AS n FROM events").one().n)
        return events, int(self._sql.databaseSize)

    def events_after(self, after: int, until: int) -> list[StoredEvent]:
        # Rows are taken one at a time from the cursor, so a page stops at PAGE_CHARS of
        # data (an event can be 256 Ki characters) without reading the rest.
        events: list[StoredEvent] = []
        chars = 0
        cursor = self._sql.exec("SELECT id, type, data FROM events WHERE id > ? AND id <= ? ORDER BY id LIMIT ?", after, until, PAGE_SIZE)
        while chars < PAGE_CHARS:
            step = cursor.next()
            if step.done:
                break
            row = step.value
            events.append(StoredEvent(id=int(row.id), type=str(row.type), data=str(row.data)))
            chars += len(events[-1].data)
        return events

    def keep_last_event_only(self) -> None:
        """A stored response past RESUME_TTL_S: its events but the terminal (which holds the
        Response) are deleted; its row, head and input stay."""
        self._sql.exec("DELETE FROM events WHERE id < (SELECT max(id) FROM events)")

    async def delete_all(self) -> None:
        await self._storage.deleteAll()

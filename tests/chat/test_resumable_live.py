"""What a resumable answer keeps in memory (chat.resumable.live: the batch not yet written,
the tail served to readers, the pushes to followers), how its frames are numbered once
per chunk (sse.FrameNumberer), and how a batch of events is written in one
statement (chat.resumable.store, run here on CPython's SQLite: the same engine and SQL as
a Durable Object's)."""

from __future__ import annotations

import sqlite3
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chat.resumable.answer import AnswerRow
from chat.resumable.formats import AnswerKind
from chat.resumable.live import MAX_QUEUED_BYTES, PAGE_CHARS, PAGE_SIZE, LiveTail, WriteBatch, takes_push
from chat.resumable.store import MAX_BATCH_BYTES, AnswerStore
from sse import (
    FAST_PATH_MAX_CHARS,
    EventNumberer,
    FrameNumberer,
    LineTooLongError,
    Part,
    PartEnding,
    PartKind,
    ReframerStats,
    SSEEncoder,
    StoredEvent,
    UIMessageStreamEncoder,
)
from sse import _numbering as numbering
from tests.sse.support import three_ways


def numbered(first: int, count: int, data: str = "x") -> list[StoredEvent]:
    return [StoredEvent(id=i, type="delta", data=data) for i in range(first, first + count)]


# --- the batch not yet written ---------------------------------------------------------


def test_the_first_events_are_written_at_once_and_later_ones_at_most_once_per_interval():
    batch = WriteBatch(interval_s=0.05)
    assert batch.add(numbered(1, 1), now=10.0) <= 0, "the answer's start is not held back"
    assert batch.take(now=10.0) == numbered(1, 1)
    assert batch.add(numbered(2, 1), now=10.01) == pytest.approx(0.04)
    assert batch.add(numbered(3, 2), now=10.03) == pytest.approx(0.02), "due when the first one was"
    assert batch.take(now=10.05) == numbered(2, 3)
    assert batch.take(now=10.06) == [], "nothing left, and an empty take is no write"
    assert batch.add(numbered(5, 1), now=10.08) == pytest.approx(0.02)
    batch.take(now=10.1)
    assert batch.add(numbered(6, 1), now=10.3) <= 0, "a slow model's events are not held back"


def test_a_full_batch_is_due_at_once_whatever_the_interval():
    batch = WriteBatch(interval_s=60, max_events=3, max_chars=10)
    batch.add(numbered(1, 1), now=0.0)
    batch.take(now=0.0)
    assert batch.add(numbered(2, 2), now=1.0) > 0
    assert batch.add(numbered(4, 1), now=1.0) <= 0, "three events"
    batch.take(now=1.0)
    assert batch.add(numbered(5, 1, data="x" * 10), now=2.0) <= 0, "ten characters"


# --- the live tail ----------------------------------------------------------------------


def test_the_tail_serves_a_page_after_any_cursor_it_holds_and_none_before_it():
    tail = LiveTail(max_events=4, max_chars=1000)
    tail.append(numbered(1, 3))
    tail.append(numbered(4, 3))  # 1 and 2 went: at most 4 kept
    assert [e.id for e in tail.page_after(2)] == [3, 4, 5, 6], "the reader right behind the oldest kept"
    assert [e.id for e in tail.page_after(5)] == [6]
    assert tail.page_after(1) is None, "event 2 is gone: storage serves it"
    assert tail.page_after(6) is None, "nothing after the newest: not the tail's to answer"


def test_an_empty_or_cleared_tail_serves_nobody():
    tail = LiveTail()
    assert tail.page_after(0) is None
    tail.append(numbered(1, 2))
    tail.clear()
    assert tail.page_after(0) is None and tail.page_after(1) is None


def test_the_tail_is_bounded_in_characters_and_may_keep_nothing_of_one_huge_event():
    tail = LiveTail(max_events=100, max_chars=10)
    tail.append(numbered(1, 3, data="abcd"))  # 12 characters: the first goes
    assert [e.id for e in tail.page_after(1)] == [2, 3]
    assert tail.page_after(0) is None
    tail.append(numbered(4, 1, data="x" * 11))
    assert tail.page_after(3) is None, "an event over the bound alone is not kept"


def test_a_gap_in_the_ids_empties_the_tail_so_it_never_serves_a_page_with_a_hole():
    tail = LiveTail()
    tail.append(numbered(1, 2))
    tail.append(numbered(5, 2))
    assert tail.page_after(0) is None and tail.page_after(2) is None
    assert [e.id for e in tail.page_after(4)] == [5, 6]


def test_a_page_from_the_tail_has_the_bounds_of_a_page_from_storage():
    tail = LiveTail(max_events=PAGE_SIZE * 2, max_chars=PAGE_CHARS * 4)
    tail.append(numbered(1, PAGE_SIZE + 10))
    assert len(tail.page_after(0)) == PAGE_SIZE
    big = "y" * (PAGE_CHARS // 3 + 1)
    tail.clear()
    tail.append(numbered(1, 5, data=big))
    # Events are added while fewer than PAGE_CHARS characters are in the page: three
    # reach it, and the page stops there.
    assert [e.id for e in tail.page_after(0)] == [1, 2, 3]


# --- pushes to followers ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reader_serial", "cursor", "first_id", "queued", "pushed"),
    [
        pytest.param(2, 7, 8, 0, True, id="the-next-batch"),
        pytest.param(2, 7, 8, MAX_QUEUED_BYTES, True, id="queue-at-its-bound"),
        pytest.param(2, 7, 8, MAX_QUEUED_BYTES + 1, False, id="client-reads-slowly"),
        pytest.param(2, 6, 8, 0, False, id="it-missed-an-event"),
        pytest.param(1, 0, 1, 0, False, id="a-reader-of-the-answer-before"),
    ],
)
def test_a_follower_is_pushed_only_the_next_batch_of_its_own_answer_while_its_client_keeps_up(
        reader_serial, cursor, first_id, queued, pushed):
    assert takes_push(reader_serial=reader_serial, answer_serial=2, cursor=cursor, first_id=first_id,
                      queued_bytes=queued) is pushed


# --- numbering the relay's output -------------------------------------------------------


def general(data: bytes, last_id: int = 0) -> list[StoredEvent]:
    return EventNumberer(last_id=last_id).number(data)


def number_chunks(chunks: list[str | bytes], last_id: int = 0) -> list[StoredEvent]:
    numberer = FrameNumberer(last_id=last_id)
    events = [event for chunk in chunks for event in numberer.number(chunk)]
    assert numberer.last_id == (events[-1].id if events else last_id)
    return events


def answer_frames() -> list[str]:
    """One answer's frames, per chunk, from each of our event-stream encoders."""
    stats = ReframerStats(finish_reason="stop", usage={"prompt_tokens": 3}, deltas=2, chars=9, skipped=0, reasoning_deltas=1,
                          reasoning_chars=2, tool_calls=0)
    sse = SSEEncoder()
    ui = UIMessageStreamEncoder(message_id="m1")
    chunks = [sse.meta(request_id="r1", model="m"), sse.delta("héllo \u2028 \"q\" \\ data: x", "pad"), sse.ping(),
              sse.delta("😀", "") + sse.delta("two", "p") + sse.ping(), sse.done(stats),
              sse.error(code="stopped", message="Stopped.", request_id="r1")]
    text, reasoning, more = (Part(kind=kind, number=n) for n, kind in enumerate((PartKind.TEXT, PartKind.REASONING, PartKind.TEXT)))
    chunks += [ui.meta(request_id="r1", model="m"), ui.part_start(text, "") + ui.delta("a\nb", "pp"),
               ui.part_end(text, PartEnding.WHOLE) + ui.part_start(reasoning, "") + ui.reasoning("hm", ""),
               ui.part_end(reasoning, PartEnding.WHOLE) + ui.part_start(more, "") + ui.delta("c", ""), ui.ping(), ui.part_end(more, PartEnding.WHOLE) + ui.done(stats)]
    return [chunk for chunk in chunks if chunk]


def test_our_encoders_frames_are_numbered_as_event_numberer_does_without_it(monkeypatch):
    chunks = answer_frames()
    expected = general("".join(chunks).encode())
    assert len(expected) > 10

    class NotCalled:
        def __init__(self, *_args: object, **_kwargs: object) -> None:
            raise AssertionError("the commonest chunk took the general path")

    monkeypatch.setattr(numbering, "EventNumberer", NotCalled)
    assert number_chunks(list(chunks)) == expected
    assert number_chunks([chunk.encode() for chunk in chunks]) == expected


def test_ids_go_on_from_the_last_stored_one():
    frame = SSEEncoder().error(code="interrupted", message="Interrupted.", request_id="r1")
    assert number_chunks([frame], last_id=41) == [StoredEvent(id=42, type="error", data=general(frame.encode())[0].data)]


# Frames our encoders write, and every shape they do not: the general path must take those.
frame_pieces = st.sampled_from([
    "event: delta\ndata: {\"t\":\"x\"}\n\n", "data: {\"type\":\"start\"}\n\n", "data: [DONE]\n\n", ": ping\n\n",
    "event: done\ndata: {}\n\n", "data: é😀\u2028\n\n", "data: \n\n", "event: \ndata: x\n\n", "event: a\nevent: b\ndata: x\n\n",
    "data: one\ndata: two\n\n", "id: 7\ndata: x\n\n", "retry: 10\n\n", "data:x\n\n", "event:t\ndata: x\n\n", "data: x\r\n\r\n",
    "data: x\r\r", "\ufeffdata: bom\n\n", "\n", "\n\n\n", "data: unfinished", "event: x\n", ":comment\n", "field: v\n\n",
    "data: x\n", "\r\n", "data: \x00\n\n", "data: a\rb\n\n", "event: e\rdata: x\n\n",
])


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(frame_pieces, max_size=12), seed=st.integers(0, 1000), last_id=st.integers(0, 5))
def test_any_output_cut_anywhere_is_numbered_as_event_numberer_numbers_it_whole(pieces, seed, last_id):
    text = "".join(pieces)
    expected = general(text.encode(), last_id)
    for how, chunks in three_ways(text.encode(), seed):
        assert number_chunks(list(chunks), last_id) == expected, how
    # As text, cut between characters (the relay may hand its output on as text).
    cut_points = sorted({0, len(text), *(seed * (i + 1) % (len(text) + 1) for i in range(3))})
    texts: list[str | bytes] = [text[a:b] for a, b in zip(cut_points, cut_points[1:], strict=False)]
    assert number_chunks(texts, last_id) == expected


def test_a_long_chunk_and_an_over_long_line_are_the_general_paths_to_number_and_refuse():
    long_frame = "event: delta\ndata: " + "x" * FAST_PATH_MAX_CHARS + "\n\n"
    assert number_chunks([long_frame]) == general(long_frame.encode())
    too_long = "data: " + "x" * (8 << 20) + "\n\n"
    with pytest.raises(LineTooLongError):
        FrameNumberer().number(too_long)


# --- one statement per batch ------------------------------------------------------------


class CPythonSql:
    """ctx.storage.sql's `exec` over CPython's sqlite3, with `rowsWritten` per cursor."""

    def __init__(self) -> None:
        self.connection = sqlite3.connect(":memory:")
        self.statements: list[str] = []

    def exec(self, statement: str, *values: object) -> SimpleNamespace:
        before = self.connection.total_changes
        rows = self.connection.execute(statement, values).fetchall()
        self.statements.append(statement)
        return SimpleNamespace(rowsWritten=self.connection.total_changes - before, rows=rows)


def stored_store() -> tuple[AnswerStore, CPythonSql]:
    sql = CPythonSql()
    store = AnswerStore(SimpleNamespace(sql=sql))
    store.begin(AnswerRow(kind=AnswerKind.CHAT, request_id="r1", serial=1, live=True))
    sql.statements.clear()
    return store, sql


def rows(sql: CPythonSql) -> list[StoredEvent]:
    found = sql.connection.execute("SELECT id, type, data FROM events ORDER BY id").fetchall()
    return [StoredEvent(id=i, type=t, data=d) for i, t, d in found]


def test_a_chunks_events_are_written_in_one_statement_exactly_as_they_were():
    store, sql = stored_store()
    first = general(SSEEncoder().meta(request_id="r1", model="m").encode())
    batch = [StoredEvent(id=2 + i, type="delta", data=data) for i, data in
             enumerate(['{"text":"é😀 \\"q\\" \\\\ \\u0000"}', "[DONE]", "", "\u2028 raw"])]
    store.append(first)
    store.append(batch)
    store.append([])
    assert rows(sql) == first + batch
    assert len(sql.statements) == 2 and store.statements == 2 and store.rows_written == 5


def test_a_batch_too_large_for_one_statement_is_split_and_still_stored_whole():
    store, sql = stored_store()
    # Each event alone is far below a row's 2 MB; together, above the batch's budget.
    big = [StoredEvent(id=i, type="delta", data="😀" * (MAX_BATCH_BYTES // 12)) for i in range(1, 9)]
    store.append(big)
    assert rows(sql) == big
    assert 2 <= len(sql.statements) <= 8 and store.rows_written == 8

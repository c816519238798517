"""The readers of a resumable answer (FFI). Each is a ReadableStream of its own that pulls
pages from its cursor: from the answer's live tail in memory while it is close behind,
else from storage. A reader that has every event so far follows the answer: each new
batch is pushed to it as it is stored, with no pull and no read, until it falls behind
(its client reads slowly) and pulls again. What it does at each pull is the state
machine's decision (Answer.reader_step), so it ends with exactly one terminal event
whatever happened to the answer meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import js

from chat.platform.ffi import JsException, ProxyScope, js_bytes, js_object
from chat.resumable.answer import Answer, AnswerRow
from chat.resumable.formats import ReaderFormat
from chat.resumable.live import MAX_QUEUED_BYTES, LiveTail, takes_push
from chat.resumable.store import AnswerStore
from sse import StoredEvent


class Feed:
    """What the object's readers read: the tail of the answer being made, storage behind
    it, and the pushes to the readers following it."""

    def __init__(self, store: AnswerStore) -> None:
        self._store = store
        self._tail = LiveTail()
        self._followers: dict[Reader, asyncio.Future[None]] = {}

    def stored(self, serial: int, events: list[StoredEvent]) -> None:
        """`events` of answer `serial` are stored: kept in the tail, pushed to followers."""
        self._tail.append(events)
        for reader in list(self._followers):
            if not reader.offer(serial, events):
                self.unfollow(reader)

    def restart(self) -> None:
        """Nothing is kept in memory any longer (a new answer begins, the answer ended or
        expired); every follower looks at the answer again: it ends, or reads storage."""
        self._tail.clear()
        followers, self._followers = self._followers, {}
        for future in followers.values():
            if not future.done():
                future.set_result(None)

    def ping(self) -> None:
        """A keep-alive for every follower: it is waiting for the answer to go on."""
        for reader in list(self._followers):
            if not reader.ping():
                self.unfollow(reader)

    def page_after(self, cursor: int, until: int) -> list[StoredEvent]:
        """The page after event `cursor`, of the events up to `until` (the last durable one)."""
        page = self._tail.page_after(cursor)
        return page if page is not None else self._store.events_after(cursor, until)

    async def follow(self, reader: Reader) -> None:
        """Returns when `reader` stops following: it fell behind, sent its answer's
        terminal event, left, or the answer ended or was replaced."""
        future = self._followers[reader] = asyncio.get_event_loop().create_future()
        await future

    def unfollow(self, reader: Reader) -> None:
        future = self._followers.pop(reader, None)
        if future is not None and not future.done():
            future.set_result(None)


class Reader:
    def __init__(self, *, answer: Answer, feed: Feed, row: AnswerRow, format: ReaderFormat, after: int,
                 on_detach: Callable[[], None]) -> None:
        self._answer = answer
        self._feed = feed
        self._row = row  # the answer this reader reads
        self._format = format
        self._writer = format.writer()
        self._cursor = after
        self._on_detach = on_detach
        self._proxies = ProxyScope()
        self._controller: Any = None
        self._attached = False
        self._has_terminal = False  # it sent its answer's terminal event: nothing may follow

    def stream(self) -> Any:
        proxy = self._proxies.proxy
        source = {"start": proxy(self._start), "pull": proxy(self._pull), "cancel": proxy(self._cancel)}
        # highWaterMark 0: a page is read only when the client asks for more. Counted in
        # bytes, so what a follower's client has not read yet is known (desiredSize).
        return js.ReadableStream.new(js_object(source), js.ByteLengthQueuingStrategy.new(js_object({"highWaterMark": 0})))

    def _start(self, controller: Any) -> None:
        self._controller = controller
        self._attached = True
        self._answer.attach()

    async def _pull(self, controller: Any) -> None:
        try:
            while True:
                step = self._answer.reader_step(self._row.serial, self._cursor, has_terminal=self._has_terminal)
                if step.action == "send":
                    events = self._feed.page_after(self._cursor, self._answer.last_id)
                    if not events:  # storage and state disagree: never spin, never end silently
                        return self._end(controller, "internal_error")
                    self._sent(events)
                    controller.enqueue(js_bytes(self._writer.write(events).encode()))
                    return None
                if step.action == "end":
                    return self._end(controller, None)  # it has every event, the terminal one last
                if step.action == "cut":
                    return self._end(controller, step.code)
                # It has every event so far: it follows the answer until that changes.
                await self._feed.follow(self)
                if self._proxies.closed:
                    return None  # it left meanwhile
        except JsException:
            self._detach()  # the client left while we wrote; its cancel releases the rest
            return None

    def offer(self, serial: int, events: list[StoredEvent]) -> bool:
        """Pushes the batch `events` of answer `serial` to this follower's client; False
        when it stops following: it would fall behind (takes_push), it has just been sent
        its terminal event (its pull ends it), or its stream is gone."""
        desired = self._controller.desiredSize  # minus the bytes queued; null once errored
        queued = -int(desired) if isinstance(desired, int | float) else MAX_QUEUED_BYTES + 1
        if not takes_push(reader_serial=self._row.serial, answer_serial=serial, cursor=self._cursor,
                          first_id=events[0].id, queued_bytes=queued):
            return False
        try:
            self._controller.enqueue(js_bytes(self._writer.write(events).encode()))
        except JsException:
            return False
        self._sent(events)
        return not self._has_terminal

    def ping(self) -> bool:
        """A keep-alive to this follower's client; False when its stream is gone."""
        try:
            self._controller.enqueue(js_bytes(self._writer.ping().encode()))
        except JsException:
            return False
        return True

    def _sent(self, events: list[StoredEvent]) -> None:
        self._cursor = events[-1].id
        self._has_terminal = self._row.kind.ends_with_terminal(events)

    def _end(self, controller: Any, code: str | None) -> None:
        if code is not None:
            # The answer this reader was reading went away: its terminal event says so.
            events = self._row.kind.cut(code, request_id=self._row.request_id, after=self._cursor, head=self._row.head)
            controller.enqueue(js_bytes(self._writer.write(events).encode()))
        controller.close()
        self._release()

    def _cancel(self, _reason: Any) -> None:
        self._release()

    def _detach(self) -> None:
        if self._attached:
            self._attached = False
            self._on_detach()

    def _release(self) -> None:
        # After close or cancel the stream calls nothing of ours again; a pull still
        # waiting holds its own coroutine, not these proxies.
        self._detach()
        self._feed.unfollow(self)
        self._proxies.close()

"""One reader of a resumable answer: a pull-driven ReadableStream (FFI) that reads storage
from its own cursor, a page per pull, pinged while it waits for the answer to go on.
What it does at each pull is the state machine's decision (Answer.reader_step), so it
ends with exactly one terminal event whatever happened to the answer meanwhile."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import js

from chat.platform.ffi import JsException, ProxyScope, js_bytes, js_object
from chat.resumable.answer import Answer, AnswerRow
from chat.resumable.formats import ReaderFormat
from chat.resumable.store import AnswerStore
from sse import ERROR_MESSAGES, EventNumberer

# Resolves with "events" when an event is stored or the answer ends, "ping" at a ping.
Wake = Callable[[], Awaitable[str]]


class Reader:
    def __init__(self, *, answer: Answer, store: AnswerStore, wake: Wake, row: AnswerRow, format: ReaderFormat,
                 after: int, on_detach: Callable[[], None]) -> None:
        self._answer = answer
        self._store = store
        self._wake = wake
        self._row = row  # the answer this reader reads
        self._format = format
        self._writer = format.writer()
        self._cursor = after
        self._on_detach = on_detach
        self._proxies = ProxyScope()
        self._attached = False
        self._has_terminal = False  # it sent its answer's terminal event: nothing may follow

    def stream(self) -> Any:
        proxy = self._proxies.proxy
        source = {"start": proxy(self._start), "pull": proxy(self._pull), "cancel": proxy(self._cancel)}
        # highWaterMark 0: a page is read from storage only when the client asks for more.
        return js.ReadableStream.new(js_object(source), js_object({"highWaterMark": 0}))

    def _start(self, _controller: Any) -> None:
        self._attached = True
        self._answer.attach()

    async def _pull(self, controller: Any) -> None:
        try:
            while True:
                step = self._answer.reader_step(self._row.serial, self._cursor, has_terminal=self._has_terminal)
                if step.action == "send":
                    events = self._store.events_after(self._cursor)
                    if not events:  # storage and state disagree: never spin, never end silently
                        return self._end(controller, "internal_error")
                    self._cursor = events[-1].id
                    self._has_terminal = self._row.kind.ends_with_terminal(events)
                    controller.enqueue(js_bytes(self._writer.write(events).encode()))
                    return None
                if step.action == "end":
                    return self._end(controller, None)  # it has every event, the terminal one last
                if step.action == "cut":
                    return self._end(controller, step.code)
                if await self._wake() == "ping":
                    controller.enqueue(js_bytes(self._writer.ping().encode()))
                    return None
        except JsException:
            self._detach()  # the client left while we wrote; its cancel releases the rest
            return None

    def _end(self, controller: Any, code: str | None) -> None:
        if code is not None:
            # The answer this reader was reading went away: its terminal event says so.
            frames = self._row.kind.encoder().error(code=code, message=ERROR_MESSAGES[code], request_id=self._row.request_id)
            events = EventNumberer(last_id=self._cursor).number(frames.encode())
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
        self._proxies.close()

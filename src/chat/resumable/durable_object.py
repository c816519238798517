"""Resumable answers: a Durable Object, one per answer (or per AI SDK chat), that produces
the answer whoever is reading, stores its events and serves them to any number of readers
from any event on.

The answer is made exactly as on /api/chat: the model stream goes through a StreamRelay
(so the lifecycle's rules, pings aside, are the same), but the relay's output goes to
a sink here instead of to one client. The sink numbers each event (sse.EventNumberer),
stores it in the object's SQLite storage and wakes the readers waiting for it. Readers are
pull-driven ReadableStreams that read storage from their own cursor, so a slow reader
costs nothing but its cursor and a reader that comes back starts where it left off.

Storage: `answer`, one row saying how the answer stands; `events`, one row per event.
The object's alarm is its heartbeat while the answer is made, finds an answer a restart
cut off (events stored, no producer in this instance), and frees the storage RESUME_TTL_S
after the answer ended.

Routes (called by chat.resumable.client through the binding; not reachable from outside):
POST /start, GET /events?after=N&format=F[&active=1], DELETE /events.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import js
from pyodide.ffi import JsException, create_proxy, to_js
from workers import DurableObject

from chat.config import Config
from chat.logs import log
from chat.model.call import ModelCall
from chat.platform.edge import read_config
from chat.stream.lifecycle import StreamLifecycle
from chat.stream.relay import StreamRelay
from chat.stream.upstream import start_model_stream
from chat.web.errors import ApiError
from sse import (
    ERROR_MESSAGES,
    EventNumberer,
    Reframer,
    ReplayWriter,
    SSEEncoder,
    StoredEvent,
    UIMessageStreamEncoder,
)

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS answer (one INTEGER PRIMARY KEY CHECK (one = 1), kind TEXT NOT NULL,"
    " request_id TEXT NOT NULL, serial INTEGER NOT NULL, live INTEGER NOT NULL, ended_at REAL)",
    "CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, type TEXT NOT NULL, data TEXT NOT NULL)",
)
# What a reader gets per pull at most: bounds what one replay holds in memory at once.
PAGE_SIZE = 256
PAGE_CHARS = 256 * 1024
# How long a stop (DELETE, a new turn of a UI chat) waits for the answer's pipe to settle.
STOP_WAIT_S = 2.0


def _js_object(value: dict[str, Any]) -> Any:
    return to_js(value, dict_converter=js.Object.fromEntries)


def _json_response(status: int, payload: dict[str, Any] | None = None) -> Any:
    body = None if payload is None else json.dumps(payload)
    return js.Response.new(body, _js_object({"status": status, "headers": {"content-type": "application/json"}}))


class ChatStream(DurableObject):
    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        self._sql = ctx.storage.sql
        self._relay: StreamRelay | None = None  # the answer being made by this instance
        self._relay_ended: asyncio.Future[None] = asyncio.get_event_loop().create_future()
        # Readers waiting for more share one future, resolved with "events" when an event
        # is stored and with "ping" by the answer's one ticker. No reader sets a timer of
        # its own: a timer cancelled in Pyodide stays active in workerd until it would have
        # fired, and an isolate may have at most 10,000 (many readers of a long answer
        # reached that with a timeout per wait).
        self._wake: asyncio.Future[str] | None = None
        self._readers = 0
        self._unread_since: float | None = None  # monotonic time the last reader left
        # The `answer` row, kept in memory as written: readers look at it on every pull,
        # once per event, so it is read from storage only once per instance.
        self._answer: dict[str, Any] | None = None
        self._answer_loaded = False
        self._starting = asyncio.Lock()  # one start at a time: turns of one UI chat may race
        self._tasks: set[asyncio.Task[None]] = set()

    # --- the routes ------------------------------------------------------------------

    async def fetch(self, request: Any) -> Any:
        js_request = request.js_object if hasattr(request, "js_object") else request
        method = str(js_request.method)
        url = js.URL.new(js_request.url)
        path = str(url.pathname)
        try:
            if path == "/start" and method == "POST":
                return await self._start(json.loads(str(await js_request.text())))
            if path == "/events" and method == "GET":
                params = url.searchParams
                return self._read(int(str(params.get("after"))), str(params.get("format")), params.get("active") == "1")
            if path == "/events" and method == "DELETE":
                return await self._stop_request()
        except ApiError as error:
            return _json_response(error.status, {"code": error.code, "message": error.message, "headers": error.headers})
        return _json_response(404, {"code": "not_found"})

    async def alarm(self, *_args: Any) -> None:
        state = self._state()
        if state is None:
            return
        if state["live"]:
            if self._relay is None:
                self._interrupted(state)  # arms the expiry alarm
            else:
                self._arm(time.time() + self._config().resume_grace_ms / 1000)
            return
        expires_at = float(state["ended_at"]) + self._config().resume_ttl_s
        if time.time() >= expires_at:
            await self.ctx.storage.deleteAll()
            self._answer = None
            log("chat_resumable_expired", request_id=state["request_id"])
        else:
            self._arm(expires_at)

    # --- making the answer -----------------------------------------------------------

    async def _start(self, order: dict[str, Any]) -> Any:
        async with self._starting:
            return await self._start_locked(order)

    async def _start_locked(self, order: dict[str, Any]) -> Any:
        config = self._config()
        request_id, kind = str(order["request_id"]), str(order["kind"])
        if self._relay is not None:
            # A new turn of the same chat: the answer still being made is stopped, and its
            # terminal event stored, before the new one takes the storage over.
            relay = self._relay
            relay.stop("stopped")
            await asyncio.wait({relay.settled, self._relay_ended}, timeout=STOP_WAIT_S, return_when=asyncio.ALL_COMPLETED)
        model, upstream, gateway_log_id = await start_model_stream(
            self.env.AI, ModelCall.from_order(order), config, request_id, self._keep_alive
        )
        for statement in SCHEMA:
            self._sql.exec(statement)
        state = self._state()
        serial = 1 if state is None else int(state["serial"]) + 1
        self._sql.exec("DELETE FROM events")
        self._sql.exec(
            "INSERT OR REPLACE INTO answer (one, kind, request_id, serial, live, ended_at) VALUES (1, ?, ?, ?, 1, NULL)",
            kind, request_id, serial,
        )
        self._answer = {"kind": kind, "request_id": request_id, "serial": serial, "live": True, "ended_at": None}
        encoder = UIMessageStreamEncoder(message_id=order.get("message_id")) if kind == "ui" else SSEEncoder()
        stream_id = order.get("stream_id")
        reframer = Reframer(request_id=request_id, model=model, encoder=encoder, max_padding=config.padding, stream_id=stream_id,
                            gateway_log_id=gateway_log_id)
        lifecycle = StreamLifecycle(reframer, config.timeouts, now=time.monotonic())
        relay = StreamRelay(
            upstream=upstream, lifecycle=lifecycle, keep_alive=self._keep_alive,
            log_fields={"request_id": request_id, "model": model, "route": f"{kind}-resumable",
                        **({"gateway_log_id": gateway_log_id} if gateway_log_id else {})},
        )
        self._relay = relay
        self._relay_ended = asyncio.get_event_loop().create_future()
        self._unread_since = time.monotonic()  # until the first reader attaches, just below
        self._keep_alive(self._tick(relay, config))
        numberer = EventNumberer()
        sink = _Sink(self, relay, numberer)
        relay.readable().pipeTo(sink.writable())
        self._arm(time.time() + config.resume_grace_ms / 1000)
        return self._reader_response(0, str(order["format"]), serial, config)

    async def _tick(self, relay: StreamRelay, config: Config) -> None:
        """While `relay` makes the answer: pings for the readers waiting, and the end of
        an answer nobody has read for RESUME_GRACE_MS. Its timers all fire (none is
        cancelled), one at a time."""
        ping_s, grace_s = config.ping_interval_ms / 1000, config.resume_grace_ms / 1000
        step = max(0.05, min(ping_s, grace_s / 4))
        last_ping = time.monotonic()
        while self._relay is relay:
            await asyncio.sleep(step)
            now = time.monotonic()
            if now - last_ping >= ping_s:
                last_ping = now
                self._wake_readers("ping")
            unread_since = self._unread_since
            if self._relay is relay and unread_since is not None and now - unread_since >= grace_s:
                state = self._state()
                log("chat_resumable_abandoned", request_id=None if state is None else state["request_id"])
                relay.stop("abandoned")
                return

    def _store(self, events: list[StoredEvent]) -> None:
        for event in events:
            self._sql.exec("INSERT INTO events (id, type, data) VALUES (?, ?, ?)", event.id, event.type, event.data)
        self._wake_readers("events")

    def _ended(self, relay: StreamRelay) -> None:
        if self._relay is not relay:
            return  # superseded: the new answer owns the row
        self._relay = None
        self._relay_ended.set_result(None)
        self._finish_row()

    def _finish_row(self) -> None:
        ended_at = time.time()
        self._sql.exec("UPDATE answer SET live = 0, ended_at = ?", ended_at)
        if self._answer is not None:
            self._answer = {**self._answer, "live": False, "ended_at": ended_at}
        self._unread_since = None
        row = self._sql.exec("SELECT request_id, (SELECT count(*) FROM events) AS events FROM answer").one()
        # What keeping the answer costs, for the operator: its events and the storage they take.
        log("chat_resumable_stored", request_id=str(row.request_id), events=int(row.events),
            storage_bytes=int(self._sql.databaseSize))
        self._wake_readers("events")
        self._arm(ended_at + self._config().resume_ttl_s)

    def _interrupted(self, state: dict[str, Any]) -> None:
        """Stored events with no producer: this instance started after the one that was
        making the answer (eviction, deploy, restart). One terminal `error` ends it."""
        last = self._last_id()
        self._store_terminal(state, "interrupted")
        log("chat_resumable_interrupted", request_id=state["request_id"], events=last)
        self._finish_row()

    def _storing_failed(self, relay: StreamRelay, problem: Exception) -> None:
        """The answer's output could not be stored (a bug of ours): it ends here, with one
        terminal `internal_error`, and the model is stopped."""
        if self._relay is not relay:
            return
        state = self._state()
        log("chat_resumable_store_failed", request_id=None if state is None else state["request_id"], detail=type(problem).__name__)
        self._relay = None
        self._relay_ended.set_result(None)
        relay.stop("internal_error")  # its own terminal frame is not stored: this one is
        if state is not None:
            self._store_terminal(state, "internal_error")
        self._finish_row()

    def _store_terminal(self, state: dict[str, Any], code: str) -> None:
        encoder = UIMessageStreamEncoder() if state["kind"] == "ui" else SSEEncoder()
        frame = encoder.error(code=code, message=ERROR_MESSAGES[code], request_id=state["request_id"])
        self._store(EventNumberer(last_id=self._last_id()).number(frame.encode()))

    def _last_id(self) -> int:
        return int(self._sql.exec("SELECT coalesce(max(id), 0) AS last FROM events").one().last)

    async def _stop_request(self) -> Any:
        state = self._state()
        if state is None:
            raise ApiError("stream_not_found")
        if self._relay is not None:
            log("chat_resumable_stopped", request_id=state["request_id"])
            relay = self._relay
            relay.stop("stopped")
            # Answered once the model's pipe has settled, its cancel sent: a request in
            # flight keeps that work going (locally, a cancel of the model's stream with
            # nothing in flight was seen never to reach it).
            await asyncio.wait({relay.settled, self._relay_ended}, timeout=STOP_WAIT_S, return_when=asyncio.ALL_COMPLETED)
        elif state["live"]:
            self._interrupted(state)
        return _json_response(204)

    # --- readers ---------------------------------------------------------------------

    def _read(self, after: int, format: str, active_only: bool) -> Any:
        state = self._state()
        if active_only and (state is None or not (state["live"] and self._relay is not None)):
            return _json_response(204)  # the AI SDK's "no answer in progress"
        if state is None:
            raise ApiError("stream_not_found")
        if state["live"] and self._relay is None:
            self._interrupted(state)
            state = self._state() or state
        last = self._last_id()
        if after > last and state["live"]:
            raise ApiError("invalid_last_event_id")  # no such event was ever sent
        if after >= last and not state["live"]:
            # The reader has the whole answer: 204 is what tells a browser's EventSource
            # to stop reconnecting.
            return _json_response(204)
        return self._reader_response(after, format, int(state["serial"]), self._config())

    def _reader_response(self, after: int, format: str, serial: int, config: Config) -> Any:
        reader = _Reader(self, ReplayWriter(format), after, serial)  # type: ignore[arg-type]
        return js.Response.new(reader.stream(), _js_object({"status": 200}))

    def _attached(self) -> None:
        self._readers += 1
        self._unread_since = None

    def _detached(self) -> None:
        self._readers -= 1
        if self._readers == 0 and self._relay is not None:
            self._unread_since = time.monotonic()  # the ticker ends the answer after the grace

    async def _next_wake(self) -> str:
        """"events" once an event is stored (or the answer ends), "ping" at the next ping."""
        if self._wake is None or self._wake.done():
            self._wake = asyncio.get_event_loop().create_future()
        return await asyncio.shield(self._wake)

    def _wake_readers(self, reason: str) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(reason)

    def _events_after(self, after: int) -> list[StoredEvent]:
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

    # --- plumbing --------------------------------------------------------------------

    def _state(self) -> dict[str, Any] | None:
        if not self._answer_loaded:
            self._answer = self._stored_state()
            self._answer_loaded = True
        return self._answer

    def _stored_state(self) -> dict[str, Any] | None:
        exists = self._sql.exec("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'answer'").one().n
        if not exists:
            return None
        rows = self._sql.exec("SELECT kind, request_id, serial, live, ended_at FROM answer").toArray()
        if not len(rows):
            return None
        row = rows[0]
        return {"kind": str(row.kind), "request_id": str(row.request_id), "serial": int(row.serial),
                "live": bool(row.live), "ended_at": row.ended_at}

    def _config(self) -> Config:
        return read_config(self.env)

    def _arm(self, at_seconds: float) -> None:
        self._keep_alive(self.ctx.storage.setAlarm(round(at_seconds * 1000)))

    def _keep_alive(self, work: Any) -> None:
        # The object lives on between requests, but the work (the answer's pipe, above all)
        # is tied to the request that began it: waitUntil keeps that request's context
        # open until the work is done, so a cancel of the model's stream still reaches it
        # after the first reader has gone (without it, locally, it was seen not to).
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        proxy = create_proxy(task)
        self.ctx.waitUntil(proxy)
        task.add_done_callback(lambda done: (self._tasks.discard(done), proxy.destroy()))


class _Sink:
    """Where the relay's output goes: every event is numbered, stored, and announced."""

    def __init__(self, owner: ChatStream, relay: StreamRelay, numberer: EventNumberer) -> None:
        self._owner = owner
        self._relay = relay
        self._numberer = numberer
        self._proxies: list[Any] = []

    def writable(self) -> Any:
        sink = {"write": self._proxy(self._write), "close": self._proxy(self._close), "abort": self._proxy(self._abort)}
        return js.WritableStream.new(_js_object(sink))

    def _proxy(self, function: Any) -> Any:
        proxy = create_proxy(function)
        self._proxies.append(proxy)
        return proxy

    def _write(self, chunk: Any, _controller: Any = None) -> None:
        if self._owner._relay is not self._relay:
            return  # a stopped answer's late bytes are not stored
        try:
            self._owner._store(self._numberer.number(chunk.to_bytes()))
        except Exception as problem:  # noqa: BLE001 - never a wedged answer: it ends instead
            self._owner._storing_failed(self._relay, problem)

    def _close(self, *_args: Any) -> None:
        self._done()

    def _abort(self, *_args: Any) -> None:
        self._done()

    def _done(self) -> None:
        self._owner._ended(self._relay)
        for proxy in self._proxies:
            proxy.destroy()
        self._proxies.clear()


class _Reader:
    """One reader's stream: storage read from its cursor on, a page per pull, pinged
    while it waits for the answer to go on."""

    def __init__(self, owner: ChatStream, writer: ReplayWriter, after: int, serial: int) -> None:
        self._owner = owner
        self._writer = writer
        self._cursor = after
        self._serial = serial
        self._proxies: list[Any] = []
        self._attached = False

    def stream(self) -> Any:
        source = {"start": self._proxy(self._start), "pull": self._proxy(self._pull), "cancel": self._proxy(self._cancel)}
        # highWaterMark 0: a page is read from storage only when the client asks for more.
        return js.ReadableStream.new(_js_object(source), _js_object({"highWaterMark": 0}))

    def _proxy(self, function: Any) -> Any:
        proxy = create_proxy(function)
        self._proxies.append(proxy)
        return proxy

    def _start(self, _controller: Any) -> None:
        self._attached = True
        self._owner._attached()

    async def _pull(self, controller: Any) -> None:
        owner = self._owner
        try:
            while True:
                state = owner._state()
                if state is None or int(state["serial"]) != self._serial:
                    return self._end(controller)  # expired, or superseded by a new turn
                events = owner._events_after(self._cursor)
                if events:
                    self._cursor = events[-1].id
                    controller.enqueue(to_js(self._writer.write(events).encode()))
                    return None
                if not state["live"]:
                    return self._end(controller)  # every event was read
                if await owner._next_wake() == "ping":
                    controller.enqueue(to_js(self._writer.ping().encode()))
                    return None
        except JsException:
            self._detach()  # the client left while we wrote; its cancel releases the rest
            return None

    def _end(self, controller: Any) -> None:
        controller.close()
        self._release()

    def _cancel(self, _reason: Any) -> None:
        self._release()

    def _detach(self) -> None:
        if self._attached:
            self._attached = False
            self._owner._detached()

    def _release(self) -> None:
        # After close or cancel the stream calls nothing of ours again; a pull still
        # waiting holds its own coroutine, not these proxies.
        self._detach()
        for proxy in self._proxies:
            proxy.destroy()
        self._proxies.clear()

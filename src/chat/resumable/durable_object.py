"""Resumable answers: a Durable Object, one per answer (or per AI SDK chat), that produces
the answer whoever is reading, stores its events and serves them to any number of readers
from any event on.

This module is glue: what happens when is decided by the answer's state machine
(answer.Answer), the rows live in storage (store), each reader is a stream of its own
(readers), and the messages from the Worker are typed (protocol).

The answer is made exactly as on /api/chat: the model stream goes through a StreamRelay
(so the lifecycle's rules, pings aside, are the same), but the relay's output goes to a
sink here instead of to one client. The sink numbers the events of each chunk
(sse.FrameNumberer) and writes them in batches, one statement each, at most one
per live.WRITE_INTERVAL_S while the answer streams (each write is a commit, which costs
the object far more than the statement); only written events go to the readers' feed
(readers.Feed), which keeps the newest in memory and pushes them to the readers
following the answer. The object's alarm is its heartbeat while the answer is made,
finds an answer a restart cut off, and frees the storage RESUME_TTL_S after the answer
ended.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import js
from workers import DurableObject

from chat.api.responses import finished_output
from chat.api.stored_items import PageQuery, listed_input, page, stored_item
from chat.config import Config
from chat.logs import log
from chat.model import catalog
from chat.output.check import answer_check
from chat.platform import ffi
from chat.platform.edge import read_config
from chat.resumable.answer import Alarm, Answer, AnswerRow, Read, Stop, Tick, Timing
from chat.resumable.formats import RESPONSE_TERMINALS, AnswerKind, ReaderFormat
from chat.resumable.live import WriteBatch
from chat.resumable.protocol import Failure, MalformedOrder, ReadOrder, StartOrder, images_restored, parsed, received
from chat.resumable.readers import Feed, Reader
from chat.resumable.store import AnswerStore
from chat.stream.lifecycle import StreamLifecycle
from chat.stream.relay import StreamRelay, load_plumbing
from chat.stream.upstream import start_model_stream
from chat.web.errors import ApiError
from sse import MAX_STORED_EVENT_BYTES, FrameNumberer, Reframer, StoredEvent, portable_json

# How long a stop (DELETE, a new turn of a UI chat) waits for the answer's pipe to settle.
STOP_WAIT_S = 2.0


class ChatStream(DurableObject):
    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        self._store = AnswerStore(ctx.storage)
        self._answer: Answer | None = None  # loaded from storage on first use
        self._relay: StreamRelay | None = None  # the answer being made by this instance
        self._relay_ended: asyncio.Future[None] = asyncio.get_event_loop().create_future()
        # The readers' pings come from the answer's one ticker. No reader sets a timer of
        # its own: a timer cancelled in Pyodide stays active in workerd until it would have
        # fired, and an isolate may have at most 10,000 (many readers of a long answer
        # reached that with a timeout per wait).
        self._feed = Feed(self._store)
        self._starting = asyncio.Lock()  # one start at a time: turns of one UI chat may race
        self._durable: asyncio.Future[None] | None = None  # the last step waiting for storage (_durably)
        # The conversation the stored response being made is a turn of: (its object's key,
        # the owner, the turn's own input items), appended to it before its terminal goes out.
        self._conversation: tuple[str, str, list[Any]] | None = None

    # --- the Worker's calls (RPC; chat.resumable.protocol) ------------------------------

    async def begin_answer(self, order: Any) -> Any:
        """Start the answer a StartOrder (JSON) describes; the first reader's Response."""
        return await self._answering(lambda: self._start(StartOrder.from_json(str(order))))

    async def read_answer(self, after: Any, format: Any, active_only: Any, owner: Any = "", peek: Any = False) -> Any:
        """A reader's Response from after event `after`: its stream, 204 or a Failure
        (`peek`: 200 instead of the stream, and no reader attached)."""
        return await self._answering(lambda: self._read_now(ReadOrder.of(after, format, active_only, owner, peek)))

    async def stop_answer(self) -> Any:
        """Stop the answer being made (204), or a Failure."""
        return await self._answering(self._stop_request)

    # A stored response's calls (/v1/responses/{id}): each for its owner only, and each a
    # 404 for anyone else, as for an id never issued.

    async def describe_response(self, owner: Any) -> Any:
        """The Response object as it stands (200, JSON), or a Failure."""
        return await self._answering(lambda: self._for_owner(owner, self._described))

    async def cancel_response(self, owner: Any) -> Any:
        """Stops a background response (its terminal stored first); its Response object."""
        return await self._answering(lambda: self._for_owner(owner, self._cancel))

    async def delete_response(self, owner: Any) -> Any:
        """Stops the response if it is being made, and deletes it."""
        return await self._answering(lambda: self._for_owner(owner, self._delete))

    async def response_history(self, owner: Any) -> Any:
        """What a `previous_response_id` continues from: the stored input items and the
        finished output (JSON), or a Failure (previous_response_not_found)."""
        return await self._answering(lambda: self._history(owner))

    async def response_items(self, owner: Any, places: Any) -> Any:
        """The items at `places` (JSON: a list of chat.api.stored_items places) of an ended
        stored response, each with its id or null where it has none (JSON), or a Failure."""
        return await self._answering(lambda: self._for_owner(owner, lambda answer: self._items(answer, places)))

    async def response_input_items(self, owner: Any, query: Any) -> Any:
        """A page of the stored response's input items (JSON, OpenAI's list), or a Failure."""
        return await self._answering(lambda: self._for_owner(owner, lambda answer: self._input_page(answer, query)))

    async def _answering(self, call: Callable[[], Awaitable[Any]]) -> Any:
        # Failures go back as values: an exception would reach the Worker as the text of
        # this object's traceback.
        try:
            return await call()
        except MalformedOrder as problem:
            ffi.alarm("chat_resumable_malformed_order", detail=str(problem))
            return _failure(ApiError("internal_error"))
        except ApiError as error:
            return _failure(error)
        except Exception as exc:  # noqa: BLE001 - never a traceback to the Worker
            ffi.alarm("internal_error", route="resumable", detail=type(exc).__name__)
            return _failure(ApiError("internal_error"))

    async def alarm(self, *_args: Any) -> None:
        answer = self._state()
        action = answer.alarm(now=time.time())
        if action is Alarm.INTERRUPT:
            self._interrupt(answer)
        elif action is Alarm.EXPIRE:
            request_id = answer.row.request_id if answer.row else None
            await self._store.delete_all()
            answer.expire()
            self._feed.restart()  # a reader following it now ends with `expired`
            log("chat_resumable_expired", request_id=request_id)
        elif action is Alarm.COMPACT:
            self._store.keep_last_event_only()
            self._feed.restart()  # a reader still reading is cut with `expired` (Answer.reader_step)
            log("chat_resumable_compacted", request_id=answer.row.request_id if answer.row else None)
            self._arm(answer)
        elif action is Alarm.REARM:
            self._arm(answer)

    # --- making the answer -------------------------------------------------------------

    async def _start(self, order: StartOrder) -> Any:
        async with self._starting:
            return await self._start_locked(order)

    async def _start_locked(self, order: StartOrder) -> Any:
        await load_plumbing()  # before the model starts: a failed import costs no inference
        config = self._config()
        answer = self._state()
        if self._relay is not None:
            # A new turn of the same chat: the answer still being made is stopped, and its
            # terminal event stored, before the new one takes the storage over.
            log("chat_resumable_stopped", request_id=answer.row.request_id if answer.row else None, reason="new_turn")
            await self._stop_relay(self._relay, "stopped")
        model, upstream, gateway_log_id = await start_model_stream(
            self.env.AI, order.call, config, order.request_id, self._keep_alive
        )
        self._relay = None
        answer.producer_lost()
        stored = order.response
        padding = config.padding
        self._conversation = None
        if stored is None:
            encoder = order.kind.encoder(order.message_id)
            row = answer.begin(order.kind, order.request_id, now=time.time(), mono=time.monotonic())
            self._store.begin(row)
        else:
            encoder = stored.encoder(order.call.inputs.get("max_tokens"))
            head = portable_json(encoder.head(request_id=order.request_id, model=model))
            row = answer.begin(order.kind, order.request_id, now=time.time(), mono=time.monotonic(), head=head,
                               background=stored.background, owner=stored.owner)
            kept = images_restored(stored.input, order.call.inputs["messages"])
            self._store.begin(row, input_text=portable_json(kept))
            # A turn of a conversation: its own input, appended with its output at its end.
            self._conversation = None if stored.conversation is None else (stored.conversation, stored.owner, kept[stored.own_from:])
            padding = padding if stored.obfuscation else 0
        self._feed.restart()  # readers of the answer before end with `stopped`
        reframer = Reframer(request_id=order.request_id, model=model, encoder=encoder,
                            max_padding=padding, stream_id=order.stream_id, gateway_log_id=gateway_log_id,
                            max_tokens=order.call.inputs.get("max_tokens"), answer_check=answer_check(order.call.output, tools_offered=bool(order.call.inputs.get("tools"))),
                            framing=catalog.framing_of(model))
        lifecycle = StreamLifecycle(reframer, config.timeouts, now=time.monotonic())
        relay = StreamRelay(
            upstream=upstream, lifecycle=lifecycle, keep_alive=self._keep_alive,
            log_fields={"request_id": order.request_id, "model": model, "route": f"{order.kind.value}-resumable",
                        **({"gateway_log_id": gateway_log_id} if gateway_log_id else {})},
        )
        self._relay = relay
        self._relay_ended = asyncio.get_event_loop().create_future()
        self._keep_alive(self._tick(relay, answer))
        sink = _Sink(stored=lambda events: self._stored(relay, events), failed=lambda problem: self._storing_failed(relay, problem),
                     ended=lambda: self._ended(relay), max_event_bytes=0 if stored is None else MAX_STORED_EVENT_BYTES)
        self._keep_alive(self._watch_pipe(relay, relay.readable().pipeTo(sink.writable())))
        self._arm(answer)
        if stored is not None and not stored.reader:
            return ffi.response(row.head, 200, {"content-type": "application/json"})  # it runs in the background
        return self._reader_response(answer, row, order.format, 0)

    async def _watch_pipe(self, relay: StreamRelay, piped: Any) -> None:
        """A sink that failed past its own guards errors the pipe, and is then never
        closed: the answer would stay live, its readers pinged for good. It ends instead."""
        try:
            await piped
        except ffi.JsException as problem:
            self._storing_failed(relay, problem)

    async def _tick(self, relay: StreamRelay, answer: Answer) -> None:
        """While `relay` makes the answer: pings for the readers waiting, and the end of
        an answer nobody has read for RESUME_GRACE_MS. Its timers all fire (none is
        cancelled), one at a time."""
        timing = answer.timing
        step = max(0.05, min(timing.ping_s, timing.grace_s / 4))
        while self._relay is relay:
            await asyncio.sleep(step)
            if self._relay is not relay:
                return
            action = answer.tick(mono=time.monotonic())
            if action is Tick.PING:
                self._feed.ping()
            elif action is Tick.ABANDON:
                log("chat_resumable_abandoned", request_id=answer.row.request_id if answer.row else None)
                relay.stop("abandoned")
                return
            elif action is Tick.TIME_LIMIT:
                log("chat_resumable_time_limit", request_id=answer.row.request_id if answer.row else None)
                relay.stop("background_time_limit")
                return

    def _stored(self, relay: StreamRelay, events: list[StoredEvent]) -> None:
        if self._relay is not relay or not events:
            return  # a stopped answer's late bytes are not stored
        self._deliver(self._state(), events)

    def _deliver(self, answer: Answer, events: list[StoredEvent]) -> None:
        """Writes the answer's next `events` (one statement); its readers get them once
        storage holds them durably, so no reader has an event a restart could lose (which
        then the terminal of the interrupted answer could take the id of)."""
        assert answer.row is not None  # only an answer that was begun has events
        self._store.append(events)
        terminal = answer.row.kind.ends_with_terminal(events)
        answer.written(events[-1].id, terminal=terminal)
        serial = answer.row.serial
        before = self._turn_appended(events[-1]) if terminal and self._conversation is not None else None
        self._durably(answer, lambda: self._hand_out(answer, serial, events), before=before)

    def _hand_out(self, answer: Answer, serial: int, events: list[StoredEvent]) -> None:
        answer.durable(events[-1].id)
        self._feed.stored(serial, events)

    def _durably(self, answer: Answer, step: Callable[[], None], *, before: Callable[[], Awaitable[None]] | None = None) -> None:
        """Runs `step` once every write made so far is durable (storage.sync(): workerd's
        output gate does not hold back what a reader's stream sends, 2026-12-03), after the
        steps before it (and `before`), and only while the answer it was for is still the
        one stored."""
        serial = answer.row.serial if answer.row is not None else None
        previous = self._durable

        async def run() -> None:
            if previous is not None:
                await previous  # never raises: each step catches its own
            try:
                await self.ctx.storage.sync()
                if before is not None:
                    await before()
                if answer.row is not None and answer.row.serial == serial:
                    step()
            except Exception as problem:  # noqa: BLE001 - storage is failing: its readers are cut, not left waiting
                log("chat_resumable_store_failed", request_id=answer.row.request_id if answer.row else None,
                    detail=type(problem).__name__)
                if answer.row is not None and answer.row.serial == serial:
                    answer.expire()
                    self._feed.restart()

        self._durable = asyncio.ensure_future(run())
        self._keep_alive(self._durable)

    def _turn_appended(self, terminal: StoredEvent) -> Callable[[], Awaitable[None]] | None:
        """For the terminal of a conversation's turn: the append of its input and finished
        output to the conversation (a failed or cancelled turn appends nothing: its client
        sends it again), done before a reader has the terminal, so the next turn finds it."""
        assert self._conversation is not None
        key, owner, own = self._conversation
        self._conversation = None
        if terminal.type not in ("response.completed", "response.incomplete"):
            return None
        # Kept as input items are: the conversation gives each an id of its own.
        output = [{k: v for k, v in item.items() if k not in ("id", "status")} for item in finished_output(json.loads(terminal.data)["response"])]
        items = [*own, *output]

        async def append() -> None:
            namespace = self.env.CONVERSATIONS
            try:
                await received(namespace.get(namespace.idFromString(key)).append_turn(owner, portable_json(items)))
            except Exception as problem:  # noqa: BLE001 - deleted meanwhile, say: the turn is answered all the same
                log("conversation_append_failed", detail=problem.code if isinstance(problem, ApiError) else type(problem).__name__)

        return append

    async def _settled(self) -> None:
        """Returns once every step waiting for storage so far has run."""
        if self._durable is not None:
            await self._durable

    def _ended(self, relay: StreamRelay) -> None:
        if self._relay is not relay:
            return  # superseded: the new answer owns the row
        self._relay = None
        self._relay_ended.set_result(None)
        answer = self._state()
        if answer.unterminated:
            assert answer.row is not None  # (unterminated says so)
            log("chat_resumable_unterminated", request_id=answer.row.request_id, events=answer.last_id)
            self._store_terminal(answer, answer.row, "internal_error")
        self._durably(answer, self._end_row)

    def _end_row(self) -> None:
        """The answer ended: its terminal event is durable (its step came after the terminal's)."""
        answer = self._state()
        if answer.row is None or not answer.row.live:
            return  # ended already (an interrupted answer read twice before its end was durable)
        row = answer.ended(now=time.time())
        self._store.end(row)
        events, storage_bytes = self._store.size()
        # What keeping the answer costs, for the operator: its events, the storage they
        # take, and what writing them took (statements, and rows as storage counts them).
        log("chat_resumable_stored", request_id=row.request_id, events=events, storage_bytes=storage_bytes,
            statements=self._store.statements, rows_written=self._store.rows_written)
        self._feed.restart()  # an ended answer is read from storage
        self._arm(answer)

    def _interrupt(self, answer: Answer) -> None:
        """Stored events with no producer: this instance started after the one that was
        making the answer (eviction, deploy, restart). One terminal `error` ends it."""
        if answer.row is None or not answer.row.live:
            return
        if not answer.terminal_stored:  # else a restart came between its terminal and its end
            log("chat_resumable_interrupted", request_id=answer.row.request_id, events=answer.written_id)
            self._store_terminal(answer, answer.row, "interrupted")
        self._durably(answer, self._end_row)

    def _storing_failed(self, relay: StreamRelay, problem: Exception) -> None:
        """The answer's output could not be stored (a bug of ours): it ends here, with one
        terminal `internal_error`, and the model is stopped."""
        if self._relay is not relay:
            return
        answer = self._state()
        log("chat_resumable_store_failed", request_id=answer.row.request_id if answer.row else None,
            detail=type(problem).__name__)
        self._relay = None
        self._relay_ended.set_result(None)
        relay.stop("internal_error")  # its own terminal frame is not stored: this one is
        if answer.row is not None:
            try:
                self._store_terminal(answer, answer.row, "internal_error")
            except Exception as again:  # noqa: BLE001 - storage is failing: readers are cut instead
                log("chat_resumable_store_failed", request_id=answer.row.request_id, detail=type(again).__name__)
                answer.expire()
                self._feed.restart()
                return
            self._durably(answer, self._end_row)

    def _store_terminal(self, answer: Answer, row: AnswerRow, code: str) -> None:
        self._deliver(answer, row.kind.cut(code, request_id=row.request_id, after=answer.written_id, head=row.head))

    async def _stop_request(self) -> Any:
        answer = self._state()
        if answer.row is not None and answer.row.kind is not AnswerKind.CHAT:
            # DELETE /api/chat/streams/{id} stops an /api/chat answer only: a stored response
            # is cancelled or deleted on its own paths, by its owner.
            raise ApiError("stream_not_found")
        action = answer.stop()
        if action is Stop.NOT_FOUND:
            raise ApiError("stream_not_found")
        if action is Stop.STOP_PRODUCER and self._relay is not None:
            log("chat_resumable_stopped", request_id=answer.row.request_id if answer.row else None, reason="delete")
            # Answered once the model's pipe has settled and its cancel is sent, so a
            # client whose DELETE returned knows the stop is done. (The cancels once seen
            # missing locally were lost by the emulator's side of workerd: docs/limits.md.)
            await self._stop_relay(self._relay, "stopped")
        elif action is Stop.INTERRUPT:
            self._interrupt(answer)
        return ffi.json_response(204)

    async def _stop_relay(self, relay: StreamRelay, code: str) -> None:
        relay.stop(code)
        await asyncio.wait({relay.settled, self._relay_ended}, timeout=STOP_WAIT_S, return_when=asyncio.ALL_COMPLETED)
        await self._settled()  # its terminal is durable and the answer ended

    # --- readers -----------------------------------------------------------------------

    async def _read_now(self, order: ReadOrder) -> Any:
        answer = self._state()
        responses = order.format is ReaderFormat.RESPONSES
        if answer.row is not None and (answer.row.kind is not order.format.kind or (responses and not answer.row.owned_by(order.owner))):
            # Another kind of answer (an id of one route read on another), or not its owner's.
            raise ApiError("response_not_found" if responses else "stream_not_found")
        if answer.orphaned and not order.active_only:
            self._interrupt(answer)
            await self._settled()
        decision = answer.read(order.after, active_only=order.active_only)
        if decision is Read.NO_CONTENT:
            return ffi.json_response(204)
        if decision is Read.NOT_FOUND:
            raise ApiError("response_not_found" if responses else "stream_not_found")
        if decision is Read.EVENTS_GONE:
            raise ApiError("invalid_request", "stream: this response's events were kept for RESUME_TTL_S after it ended, and "
                           "are gone; read the Response without stream=true.", param="stream")
        if decision is Read.INVALID_EVENT_ID:
            if responses:
                raise ApiError("invalid_request", f"starting_after: this response has sent {answer.last_id} events so far "
                               f"(sequence numbers 0 to {answer.last_id - 1}).", param="starting_after")
            raise ApiError("invalid_last_event_id")
        assert answer.row is not None  # SERVE: there is an answer
        if order.peek:
            return ffi.json_response(200)  # HEAD: a reader would attach, and none does
        return self._reader_response(answer, answer.row, order.format, order.after)

    def _reader_response(self, answer: Answer, row: AnswerRow, format: Any, after: int) -> Any:
        reader = Reader(answer=answer, feed=self._feed, row=row, format=format, after=after,
                        on_detach=lambda: answer.detach(mono=time.monotonic()))
        return ffi.response(reader.stream(), 200)

    # --- stored responses -------------------------------------------------------------

    async def _response_of(self, owner: Any) -> Answer:
        """The answer, when it is a stored response `owner` may touch (an interrupted one
        ended first); else ApiError response_not_found."""
        answer = self._state()
        if not isinstance(owner, str) or answer.row is None or not answer.row.owned_by(owner):
            raise ApiError("response_not_found")
        if answer.orphaned:
            self._interrupt(answer)
            await self._settled()
        return answer

    async def _for_owner(self, owner: Any, then: Callable[[Answer], Awaitable[Any]]) -> Any:
        return await then(await self._response_of(owner))

    async def _described(self, answer: Answer) -> Any:
        return ffi.response(self._object_text(answer), 200, {"content-type": "application/json"})

    def _object_text(self, answer: Answer) -> str:
        """The Response object (JSON): as it began while it is being made, else as its
        terminal event gave it."""
        row = answer.row
        assert row is not None and row.head is not None
        last = self._store.last_event() if not row.live else None
        if last is None or last.type not in RESPONSE_TERMINALS:
            return row.head
        return portable_json(json.loads(last.data)["response"])

    async def _cancel(self, answer: Answer) -> Any:
        row = answer.row
        assert row is not None
        if not row.background:
            raise ApiError("invalid_request", "Only a response created with background: true can be cancelled.")
        if answer.producing and self._relay is not None:
            log("chat_resumable_stopped", request_id=row.request_id, reason="cancel")
            await self._stop_relay(self._relay, "cancelled")
        return await self._described(answer)  # a finished one as it finished: cancelling is idempotent

    async def _delete(self, answer: Answer) -> Any:
        row = answer.row
        assert row is not None and row.head is not None
        response_id = json.loads(row.head)["id"]
        if answer.producing and self._relay is not None:
            # Its readers get its terminal (`deleted`) before the storage goes.
            log("chat_resumable_stopped", request_id=row.request_id, reason="delete")
            await self._stop_relay(self._relay, "deleted")
        await self._store.delete_all()
        answer.expire(code="deleted")
        self._feed.restart()
        log("chat_resumable_deleted", request_id=row.request_id)
        # OpenAI's example body (its openapi.yaml, read 2026-12-02); the SDKs read none.
        return ffi.json_response(200, {"id": response_id, "object": "response", "deleted": True})

    async def _history(self, owner: Any) -> Any:
        try:
            answer = await self._response_of(owner)
        except ApiError:
            raise ApiError("previous_response_not_found", param="previous_response_id") from None
        if answer.row is not None and answer.row.live:
            raise ApiError("invalid_request", "previous_response_id: that response is still in progress; continue "
                           "from it once it has ended.", param="previous_response_id")
        history = {"input": json.loads(self._store.input_text()), "response": json.loads(self._object_text(answer))}
        return ffi.response(portable_json(history), 200, {"content-type": "application/json"})

    async def _items(self, answer: Answer, places: Any) -> Any:
        row = answer.row
        assert row is not None and row.head is not None
        if row.live:
            raise ApiError("invalid_request", "that item's response is still in progress; refer to its items once it has ended.")
        wanted = parsed(places)
        if not isinstance(wanted, list):
            raise MalformedOrder("places")
        key = _object_key(row.head)
        output = json.loads(self._object_text(answer)).get("output") or []
        inputs = json.loads(self._store.input_text()) if any(":i" in str(place) for place in wanted) else []
        found = [stored_item(place, key=key, inputs=inputs, output=output) for place in wanted]
        return ffi.response(portable_json(found), 200, {"content-type": "application/json"})

    async def _input_page(self, answer: Answer, query: Any) -> Any:
        row = answer.row
        assert row is not None and row.head is not None
        try:
            asked = PageQuery.from_order(parsed(query))
        except (ValueError, TypeError):
            raise MalformedOrder("page") from None
        key = _object_key(row.head)
        listed = [listed_input(item, key, index) for index, item in enumerate(json.loads(self._store.input_text()))]
        return ffi.response(portable_json(page(listed, asked)), 200, {"content-type": "application/json"})

    # --- plumbing ----------------------------------------------------------------------

    def _state(self) -> Answer:
        if self._answer is None:
            config = self._config()
            row, last_id = self._store.load()
            timing = Timing(grace_s=config.resume_grace_ms / 1000, ttl_s=config.resume_ttl_s,
                            ping_s=config.ping_interval_ms / 1000, response_ttl_s=config.response_ttl_s)
            # A live answer whose terminal is stored was cut between its terminal and its end.
            last = self._store.last_event() if row is not None and row.live else None
            ended = row is not None and last is not None and row.kind.ends_with_terminal([last])
            # A stored response past RESUME_TTL_S keeps its terminal event only (compacted).
            compacted = row is not None and not row.live and last_id > 1 and self._store.size()[0] == 1
            self._answer = Answer(row, last_id=last_id, timing=timing, terminal_stored=ended, compacted=compacted)
        return self._answer

    def _config(self) -> Config:
        return read_config(self.env)

    def _arm(self, answer: Answer) -> None:
        if answer.alarm_at is not None:
            self._keep_alive(self.ctx.storage.setAlarm(round(answer.alarm_at * 1000)))

    def _keep_alive(self, work: Any) -> None:
        # The object lives on between requests, but the work (the answer's pipe, above all)
        # is tied to the request that began it: waitUntil keeps that request's context
        # open until the work is done, so the answer goes on after its first reader left.
        ffi.keep_alive(self.ctx, work)


class _Sink:
    """Where the relay's output goes: each chunk's events are numbered and batched; each
    batch is handed on to be stored when it is due (live.WriteBatch), and at the end, and
    only then sent to readers, so no reader gets an event storage does not have.
    `stored` takes a list of events: a chunk as text would feed it alike."""

    def __init__(self, *, stored: Callable[[list[StoredEvent]], None], failed: Callable[[Exception], None],
                 ended: Callable[[], None], max_event_bytes: int = 0) -> None:
        self._numberer = FrameNumberer(max_event_bytes=max_event_bytes)
        self._batch = WriteBatch()
        self._stored = stored
        self._failed = failed
        self._ended = ended
        self._proxies = ffi.ProxyScope()
        self._flush_later = self._proxies.proxy(self._flush)
        self._timer: Any = None  # the flush's timer while one is set

    def writable(self) -> Any:
        proxy = self._proxies.proxy
        return js.WritableStream.new(ffi.js_object({"write": proxy(self._write), "close": proxy(self._done), "abort": proxy(self._done)}))

    def _write(self, chunk: Any, _controller: Any = None) -> None:
        try:
            events = self._numberer.number(chunk if isinstance(chunk, str) else chunk.to_bytes())
            if not events:
                return  # a keep-alive
            due_in = self._batch.add(events, now=time.monotonic())
            if due_in <= 0:
                self._flush()
            elif self._timer is None:
                self._timer = js.setTimeout(self._flush_later, math.ceil(due_in * 1000))
        except Exception as problem:  # noqa: BLE001 - never a wedged answer: it ends instead
            self._failed(problem)

    def _flush(self, *_args: Any) -> None:
        if self._timer is not None:
            js.clearTimeout(self._timer)  # written now: no later call, least of all after _done
            self._timer = None
        try:
            if events := self._batch.take(now=time.monotonic()):
                self._stored(events)
        except Exception as problem:  # noqa: BLE001 - as in _write
            self._failed(problem)

    def _done(self, *_args: Any) -> None:
        try:
            self._flush()
        finally:  # the answer ends whatever the last write did
            try:
                self._ended()
            finally:
                self._proxies.close()


def _object_key(head: str) -> str:
    """The object's id, as its stored response's id names it (`resp_` and 64 hex digits)."""
    return str(json.loads(head)["id"])[len("resp_"):]


def _failure(error: ApiError) -> Any:
    return ffi.response(*Failure.of(error).reply())


"""The Reframer: upstream event-stream bytes in, this project's protocol bytes out.

It composes the parser, the normalizer and an encoder. Every piece of state lives on the
instance: one Worker isolate serves many requests at once, so module-level mutable state
would leak between them.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Sequence

from ._answer_check import AnswerCheck
from ._codes import ERROR_MESSAGES
from ._encoders import Encoder, SSEEncoder
from ._events import PartKind, ReframerStats, ToolCall, ToolCallDelta, ToolCallStart
from ._jsonstr import scan_body
from ._normalizer import UpstreamNormalizer, native_event_bodies
from ._padding import DEFAULT_MAX_PADDING, paddings
from ._parser import EventReader, RawEvent
from ._parts import AnswerParts
from ._receivebuffer import DEFAULT_MAX_EVENT_CHARS, DEFAULT_MAX_LINE_BYTES, ReceiveBuffer
from ._stop import StopScanner

__all__ = ["CUT_SHORT_REASONS", "Reframer"]

# Finish reasons that say the answer was cut short, not ended by the model's choice.
CUT_SHORT_REASONS = frozenset({"length", "content_filter"})
TEXT = PartKind.TEXT
REASONING = PartKind.REASONING


class Phase(enum.Enum):
    """Where one Reframer's stream is. Every move is in _MOVES; any other is a bug."""

    NEW = "new"  # nothing sent yet
    STREAMING = "streaming"  # `meta` sent; the upstream is read
    UPSTREAM_DONE = "upstream_done"  # the upstream sent `[DONE]`: input is ignored, the terminal is due
    ENDED = "ended"  # the terminal frame (`done` or `error`) was returned; nothing more is


class Move(enum.Enum):
    META = "meta"
    UPSTREAM_DONE = "upstream_done"
    TERMINAL = "terminal"


# h11's way (its _state.py): every transition in one table.
_MOVES: dict[Phase, dict[Move, Phase]] = {
    Phase.NEW: {Move.META: Phase.STREAMING},
    Phase.STREAMING: {Move.UPSTREAM_DONE: Phase.UPSTREAM_DONE, Move.TERMINAL: Phase.ENDED},
    Phase.UPSTREAM_DONE: {Move.TERMINAL: Phase.ENDED},
    Phase.ENDED: {},
}


class Reframer:
    """Re-frames one upstream model stream into the protocol of docs/protocol.md.

    Text in, text out: the runtime decodes the upstream's bytes once (a caller holding
    bytes has `decode`), and every method returns the text to send next ("" when there
    is none), which never holds a lone surrogate, so it always encodes to UTF-8. None of
    them raises on any upstream input. The first output of any kind starts with the
    `meta` event. Exactly one terminal frame (`done` or `error`) is ever returned; after
    it every method returns "". Input after the upstream's `[DONE]` is ignored. `phase`
    says where the stream is (Phase; every move in _MOVES); where its parts start and end
    is sse._parts'.
    """

    def __init__(
        self,
        *,
        request_id: str,
        model: str,
        encoder: Encoder | None = None,
        max_padding: int = DEFAULT_MAX_PADDING,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_event_chars: int = DEFAULT_MAX_EVENT_CHARS,
        rng: random.Random | None = None,
        stop: Sequence[str] = (),
        stream_id: str | None = None,
        gateway_log_id: str | None = None,
        max_tokens: int | None = None,
        answer_check: AnswerCheck | None = None,
        framing: str | None = None,
    ) -> None:
        """`encoder`: the protocol's encoding, SSEEncoder() by default; one instance per
        Reframer. `max_padding`: each `delta`/`reasoning` frame gets padding whose length
        is uniform in [0, max_padding]; 0 turns padding off. `max_line_bytes` and
        `max_event_chars`: the caps on one upstream line and one upstream event (see
        ReceiveBuffer); input over either ends the stream with `upstream_malformed`.
        `rng`: the source of padding lengths, for deterministic tests; by default
        os.urandom. `stop`: stop sequences; the answer ends (`done`, finish_reason
        "stop") just before the first one in its text, and the text is never sent.
        `stream_id`: the id of a resumable answer, sent in `meta`; `gateway_log_id`: the
        AI Gateway's log entry of the model call, sent in `meta`. `max_tokens`: the
        budget the model was given; an answer whose model gave no finish reason (native
        frames never do) and whose usage spent the budget ends with "length".
        `answer_check`: sees the answer's text; an answer the model ended of its own
        accord (not cut short, not for tool calls) that it rejects ends with its error
        code instead of `done`. `framing`: the catalog's word on the model's frames
        ("native", "openai"; None: unknown), which the normalizer's fast paths try first.

        Raises ValueError if max_padding is outside [0, 255], max_line_bytes or
        max_event_chars < 1, or a stop sequence is empty.
        """
        self.request_id = request_id
        self.model = model
        self.stream_id = stream_id
        self.gateway_log_id = gateway_log_id
        self._max_tokens = max_tokens
        # Upstream text has one owner, the buffer; it hands out blocks of whole events,
        # read by the fast path below or, failing that, by the event reader.
        self._buffer = ReceiveBuffer(max_line_bytes=max_line_bytes, max_event_chars=max_event_chars)
        self._reader = EventReader()
        self._normalizer = UpstreamNormalizer(call_id_prefix=f"call_{request_id}", framing=framing)
        self._encoder: Encoder = encoder if encoder is not None else SSEEncoder()
        self._parts = AnswerParts(self._encoder)
        self._pads = paddings(max_padding, rng)
        self._stop = StopScanner(stop) if stop else None
        self._check = answer_check
        self.phase = Phase.NEW
        self._whole_events = False  # feed_whole_event may read: STREAMING, no stop sequences or check
        self._deltas = 0
        self._chars = 0
        self._reasoning_deltas = 0
        self._reasoning_chars = 0
        self._unread_boms = 0  # stray BOM lines the reader saw after the last event read
        self.last_error_code: str | None = None
        """The code of the terminal `error` frame, once one was returned."""
        self.exception: Exception | None = None
        """The unexpected exception that ended the stream with `internal_error`, for logs."""

    @property
    def terminated(self) -> bool:
        """True once the terminal frame was returned."""
        return self.phase is Phase.ENDED

    @property
    def saw_done(self) -> bool:
        """True once the upstream sent `[DONE]`."""
        return self._normalizer.done

    @property
    def deltas(self) -> int:
        """How many `delta` events (answer text) were sent so far: cheaper than `stats`,
        which also reads the usage, for a caller that asks on every chunk."""
        return self._deltas

    @property
    def model_events(self) -> int:
        """How many upstream events carried model output so far (text, reasoning or a
        tool call). Keep-alive comments, blank lines and unreadable frames add nothing,
        so a caller can tell a model that is producing from one that only keeps the
        connection open."""
        return self._deltas + self._reasoning_deltas + self._normalizer.tool_fragments

    @property
    def stats(self) -> ReframerStats:
        """A snapshot of what has been seen and emitted so far."""
        normalizer = self._normalizer
        return ReframerStats(
            deltas=self._deltas,
            chars=self._chars,
            reasoning_deltas=self._reasoning_deltas,
            reasoning_chars=self._reasoning_chars,
            skipped=normalizer.skipped + self._reader.stray_boms - self._unread_boms,
            tool_calls=normalizer.tool_calls,
            finish_reason=self._finish_reason(),
            usage=None if normalizer.usage is None else dict(normalizer.usage),
            stop_sequence=None if self._stop is None else self._stop.sequence,
        )

    def _finish_reason(self) -> str | None:
        reason = self._normalizer.finish_reason
        # An answer that called tools ended to have them run, whatever the model said (a
        # native stream says nothing, some say "stop", a stop sequence may have come
        # after the calls), unless it was cut short.
        if self._normalizer.tool_calls and reason not in CUT_SHORT_REASONS:
            return "tool_calls"
        if self._stop is not None and self._stop.matched:
            return "stop"
        if reason is None and self._max_tokens is not None:
            # Said by nobody, but the budget is spent: it may well have been cut there,
            # and a truncated answer must never read as a natural end.
            usage = self._normalizer.usage
            if usage is not None and usage["completion_tokens"] >= self._max_tokens:
                return "length"
        return reason

    def start(self) -> str:
        """The `meta` event, or "" if it was already sent (or the stream ended)."""
        if self.phase is not Phase.NEW:
            return ""
        return self._encode([self._meta()])

    def decode(self, chunk: bytes) -> str:
        """The text of the characters `chunk` completes, for a caller holding bytes:
        invalid bytes become U+FFFD (as the event-stream spec says), and a character split
        across chunks waits for the next one. "" once the stream has ended or the
        upstream sent `[DONE]` (after which input is ignored)."""
        if self.phase is Phase.ENDED or self.phase is Phase.UPSTREAM_DONE:
            return ""
        return self._buffer.decode(chunk)

    def feed_whole_event(self, text: str) -> str | None:
        """The frames for `text` when it is exactly one event of model text in the
        commonest shape, read from between two events (one network read holding one
        token's frame: nearly every input of a live stream); else None, and nothing was
        read: give the same text to `feed`. The same frames and counts as `feed` (a text
        with escapes is copied through still escaped, which reads the same), through a few
        calls instead of a dozen."""
        if not self._whole_events or not self._buffer.between_events or len(text) > self._buffer.safe_chars or self._encoder.full:
            return None  # (text that long may pass a cap, and a full encoder ends the answer: `feed` does both)
        found = self._normalizer.whole_event(text)
        if found is None:
            return None
        reasoning, body = found
        # The body is copied through still escaped; an escape makes it longer than its text.
        chars = len(scan_body(body)) if "\\" in body else len(body)
        # Through _encode: an encoder that decodes the body (the default) may bring back
        # a lone surrogate from an escape.
        parts = self._parts
        if reasoning:
            self._reasoning_deltas += 1
            self._reasoning_chars += chars
            start = "" if parts.writing is REASONING else parts.start(REASONING)
            return self._encode([start, self._encoder.json_reasoning(body, next(self._pads))])
        self._deltas += 1
        self._chars += chars
        start = "" if parts.writing is TEXT else parts.start(TEXT)
        return self._encode([start, self._encoder.json_delta(body, next(self._pads))])

    def feed(self, text: str) -> str:
        """The frames for every upstream event `text` completes.

        A line or an event over its cap yields the frames before it and then the
        `error` frame `upstream_malformed`, and ends the stream. Never raises: an
        unexpected failure ends the stream with `internal_error` and is kept on
        `exception`.
        """
        if self.phase is Phase.ENDED or self.phase is Phase.UPSTREAM_DONE:
            return ""
        out = self._opening()
        try:
            block = self._buffer.feed_text(text)
            if block:
                # The hot path: a block of nothing but common native events is read by
                # one regex call and copied through without decoding its JSON strings.
                # With stop sequences or a check every text is read whole, to be scanned;
                # after an open tool call the text ends the call, which the normalizer does.
                fast = self._stop is None and self._check is None and not self._normalizer.call_open
                bodies = native_event_bodies(block) if fast else None
                if bodies is None:
                    self._emit(self._reader.read(block), out)
                else:
                    if self._parts.writing is not TEXT:
                        out.append(self._parts.start(TEXT))
                    out.append(self._encoder.json_deltas(bodies, self._pads))
                    self._deltas += len(bodies)
                    if "\\" in block:
                        # An escape makes a body longer than the text it stands for.
                        self._chars += sum(
                            [len(scan_body(body)) if "\\" in body else len(body) for body in bodies]
                        )
                    else:
                        self._chars += sum(map(len, bodies))
            if self._stop is not None and self._stop.matched:
                # A call still being written when the stop sequence came is whole as it is.
                self._normalizer.complete_tool_calls()
                self._emit_tool_events(out)
                out.append(self._done())
            elif self._normalizer.failure is not None:
                out.append(self._error(self._normalizer.failure))
            elif self._buffer.error is not None and not self._upstream_done:
                # Over a cap: the stream can no longer be framed ([DONE] before the
                # offending input has ended it already).
                out.append(self._error("upstream_malformed"))
            elif self._encoder.full and not self._upstream_done:
                out.append(self._error("upstream_malformed"))  # more answer than its encoder may hold
        except Exception as exc:  # the contract is "never raises"
            # Kept for the log without its traceback, whose frames would hold this
            # Reframer (and its buffers) in a reference cycle.
            self.exception = exc.with_traceback(None)
            out = self._opening()
            out.append(self._error("internal_error"))
        return self._encode(out)

    def ping(self) -> str:
        """A keep-alive frame, or "" once the stream has ended."""
        if self.phase is Phase.ENDED:
            return ""
        out = self._opening()
        out.append(self._encoder.ping())
        return self._encode(out)

    def finish(self) -> str:
        """The terminal frame for the end of the upstream: `done` if `[DONE]` was seen,
        else `error` with `upstream_incomplete`. "" if the stream already ended."""
        if self.phase is Phase.ENDED:
            return ""
        out = self._opening()
        if self.phase is Phase.UPSTREAM_DONE:
            self._normalizer.complete_tool_calls()
            self._emit_tool_events(out)
            if self._stop is not None:
                # The text held back in case it began a stop sequence did not.
                self._held_text(self._stop.flush(), out)
            out.append(self._done())
        else:
            out.append(self._error("upstream_incomplete"))
        return self._encode(out)

    def fail(self, code: str) -> str:
        """The terminal `error` frame with `code` and its generic message, or "" if the
        stream already ended. A code not in ERROR_MESSAGES becomes `internal_error`, so
        that a client only ever sees documented codes."""
        if self.phase is Phase.ENDED:
            return ""
        out = self._opening()
        out.append(self._error(code))
        return self._encode(out)

    def _done(self) -> str:
        # The terminal of an answer the upstream finished: `done`, unless the answer check
        # rejects what the model ended of its own accord. A cut is reported as the cut it
        # is (the client is told it is incomplete), and an answer that called tools has
        # its text still to come: one that called tools it was offered, not one that only
        # says it did, or called a tool nobody offered.
        if self._normalizer.failure is not None:
            return self._error(self._normalizer.failure)  # a call the encoder cannot carry (_emit_tool_events)
        stats = self.stats
        check = self._check
        if check is not None and stats.finish_reason not in CUT_SHORT_REASONS and not (stats.tool_calls and check.tools_offered):
            code = check.verdict()
            if code is not None:
                return self._error(code)
        ended = self._parts.finish(cut=self._cut(stats))
        self._end()
        return ended + self._encoder.done(stats)

    def _cut(self, stats: ReframerStats) -> bool:
        # Cut short, or (the model said neither that it stopped nor why not) the budget
        # spent: the rule of sse.openai_finish_reason.
        reason = stats.finish_reason
        if reason in CUT_SHORT_REASONS:
            return True
        usage = stats.usage
        return (reason not in ("stop", "tool_calls") and self._max_tokens is not None and usage is not None
                and usage["completion_tokens"] >= self._max_tokens)

    @property
    def _upstream_done(self) -> bool:
        # A property, not an inline test: reading moves the phase, as a type checker cannot see.
        return self.phase is Phase.UPSTREAM_DONE

    def _move(self, move: Move) -> None:
        # KeyError on a move the table has not: a bug, which `feed` turns into internal_error.
        self.phase = _MOVES[self.phase][move]

    def _end(self) -> None:
        # Whatever the upstream left unfinished is dropped at once, not when this object
        # is collected: a stream's buffers never outlive its terminal frame.
        self._move(Move.TERMINAL)
        self._whole_events = False
        self._buffer.discard()

    def _opening(self) -> list[str]:
        # What a call's output starts with: `meta`, if it was not sent yet.
        return [self._meta()] if self.phase is Phase.NEW else []

    def _meta(self) -> str:
        self._move(Move.META)
        # Stop sequences and checks need every text read whole.
        self._whole_events = self._stop is None and self._check is None
        return self._encoder.meta(
            request_id=self.request_id, model=self.model, stream_id=self.stream_id, gateway_log_id=self.gateway_log_id
        )

    def _error(self, code: str) -> str:
        if code not in ERROR_MESSAGES:
            code = "internal_error"
        # Text held back in case it began a stop sequence is model text like the rest:
        # the partial answer before the error keeps it.
        before: list[str] = []
        if self._stop is not None and not self._stop.matched:
            self._held_text(self._stop.flush(), before, check=False)
        before.append(self._parts.abandon())
        self._end()
        self.last_error_code = code
        return "".join(before) + self._encoder.error(
            code=code, message=ERROR_MESSAGES[code], request_id=self.request_id
        )

    def _held_text(self, held: str, out: list[str], *, check: bool = True) -> None:
        # Text held back in case it began a stop sequence, now known not to: sent as it is.
        if not held:
            return
        if self._parts.writing is not TEXT:
            out.append(self._parts.start(TEXT))
        out.append(self._encoder.delta(held, next(self._pads)))
        self._deltas += 1
        self._chars += len(held)
        if check and self._check is not None:
            self._check.feed(held)

    def _emit(self, events: list[RawEvent], out: list[str]) -> None:
        # One iteration per upstream event, with locals instead of attribute lookups.
        normalizer = self._normalizer
        read = normalizer.read
        encoder = self._encoder
        parts = self._parts
        delta = encoder.delta
        pads = self._pads
        deltas = self._deltas
        chars = self._chars
        stop = self._stop
        check = self._check
        for index, (event_type, data, _) in enumerate(events):
            text, reasoning = read(event_type, data)
            if normalizer.done:
                self._move(Move.UPSTREAM_DONE)
                self._ignore_boms_after(index)
                break
            if normalizer.before_text:
                # A call this text ended: whole before the text begins, in the model's order.
                self._deltas, self._chars = deltas, chars
                self._emit_tool_events(out, normalizer.before_text)
                deltas, chars = self._deltas, self._chars
                if normalizer.failure is not None:
                    self._ignore_boms_after(index)
                    break  # a call the encoder cannot carry: nothing after it (not the text)
            if stop is not None and text:
                text = stop.feed(text)
            if reasoning:
                if parts.writing is not REASONING:
                    out.append(parts.start(REASONING))
                out.append(encoder.reasoning(reasoning, next(pads)))
                self._reasoning_deltas += 1
                self._reasoning_chars += len(reasoning)
            if text:
                if parts.writing is not TEXT:
                    out.append(parts.start(TEXT))
                out.append(delta(text, next(pads)))
                deltas += 1
                chars += len(text)
                if check is not None:
                    check.feed(text)
            if normalizer.tool_events:
                self._deltas, self._chars = deltas, chars
                self._emit_tool_events(out)
                deltas, chars = self._deltas, self._chars
            if stop is not None and stop.matched or normalizer.failure is not None:
                self._ignore_boms_after(index)
                break
        self._deltas = deltas
        self._chars = chars

    def _ignore_boms_after(self, index: int) -> None:
        # The stream ended at events[index]: lines after it were never the answer's.
        self._unread_boms += sum(1 for at in self._reader.stray_bom_events if at > index)

    def _emit_tool_events(self, out: list[str], count: int | None = None) -> None:
        """The first `count` of the normalizer's tool events (None: all of them)."""
        encoder = self._encoder
        parts = self._parts
        normalizer = self._normalizer
        if self._stop is not None:
            # Text held back in case it began a stop sequence did not: a tool event came
            # first. It goes out before it, in the model's order.
            self._held_text(self._stop.flush(), out)
        events = normalizer.tool_events if count is None else normalizer.tool_events[:count]
        for event in events:
            if isinstance(event, ToolCallDelta):
                out.append(encoder.tool_call_delta(event, next(self._pads)))
            elif isinstance(event, ToolCall):
                if not encoder.carries(event):
                    normalizer.failure = "upstream_malformed"  # the answer ends here (_done, feed)
                    break
                out.append(parts.call_whole(event))
            elif isinstance(event, ToolCallStart):
                out.append(parts.start_call(event, next(self._pads)))
        if normalizer.failure is not None:
            events = normalizer.tool_events  # nothing after a call the encoding cannot carry
        del normalizer.tool_events[: len(events)]
        normalizer.before_text = 0

    @staticmethod
    def _encode(out: list[str]) -> str:
        text = "".join(out)
        if text.isascii():  # O(1): a flag on the string
            return text
        # A lone surrogate can only come from a `\udXXX` escape in upstream JSON, and
        # only ever lands inside a JSON string of ours; backslashreplace writes it back
        # as that same escape, so the output stays valid UTF-8 and valid JSON. Text copied
        # through undecoded (the fast paths) still holds its escapes and needs none of it.
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
        return text

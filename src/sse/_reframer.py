"""The Reframer: upstream event-stream bytes in, this project's protocol bytes out.

It composes the parser, the normalizer and an encoder. Every piece of state lives on the
instance: one Worker isolate serves many requests at once, so module-level mutable state
would leak between them.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from itertools import chain

from ._encoders import ERROR_MESSAGES, Encoder, SSEEncoder
from ._events import ReframerStats
from ._jsonstr import scan_body
from ._normalizer import UpstreamNormalizer, fast_response, native_event_bodies
from ._parser import DEFAULT_MAX_EVENT_CHARS, DEFAULT_MAX_LINE_BYTES, EventStreamParser, RawEvent

__all__ = ["DEFAULT_MAX_PADDING", "MAX_PADDING", "Reframer"]

DEFAULT_MAX_PADDING = 32
# Padding lengths are drawn one random byte each, which bounds them.
MAX_PADDING = 255

# What padding is made of does not matter, only its length: the stream is sent with
# `content-encoding: identity` and `no-transform`, so nothing compresses it away. Letters
# and digits need no JSON escaping, which lets encoders embed padding as it is.
_FILL = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" * 5

# Random bytes drawn per batch of paddings; one draw serves about 256 frames.
_RANDOM_BYTES_PER_REFILL = 256

# The most upstream text carried between chunks before the parser takes it (see feed).
_CARRY_LIMIT = 4096


def _length_tables(max_padding: int) -> tuple[bytes, bytes]:
    """A bytes.translate table mapping a random byte to a padding length, and the bytes
    to delete first. Deleting the bytes at or above the largest multiple of the number
    of lengths (rejection sampling) keeps every length exactly equally likely."""
    choices = max_padding + 1
    limit = 256 - 256 % choices
    table = bytes(b % choices if b < limit else 0 for b in range(256))
    return table, bytes(range(limit, 256))


_DEFAULT_LENGTH_TABLES = _length_tables(DEFAULT_MAX_PADDING)


class Reframer:
    """Re-frames one upstream model stream into the protocol of docs/protocol.md.

    Every method returns the bytes to send next (b"" when there are none) and none of
    them raises on any upstream input. The first output of any kind starts with the
    `meta` event. Exactly one terminal frame (`done` or `error`) is ever returned; after
    it every method returns b"". Bytes after the upstream's `[DONE]` are ignored.
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
    ) -> None:
        """`encoder`: the protocol's encoding, SSEEncoder() by default; one instance per
        Reframer. `max_padding`: each `delta`/`reasoning` frame gets padding whose length
        is uniform in [0, max_padding]; 0 turns padding off. `max_line_bytes`: the
        parser's line cap; a longer upstream line ends the stream with
        `upstream_malformed`. `max_event_chars`: the parser's cap on one event's data;
        a larger upstream event ends the stream the same way. `rng`: the source of padding lengths, for deterministic
        tests; by default os.urandom.

        Raises ValueError if max_padding is outside [0, 255], or max_line_bytes or
        max_event_chars < 1.
        """
        if not 0 <= max_padding <= MAX_PADDING:
            raise ValueError(f"max_padding must be in [0, {MAX_PADDING}]")
        self.request_id = request_id
        self.model = model
        self._parser = EventStreamParser(
            max_line_bytes=max_line_bytes, max_event_chars=max_event_chars
        )
        self._normalizer = UpstreamNormalizer()
        self._encoder: Encoder = encoder if encoder is not None else SSEEncoder()
        self._random_bytes: Callable[[int], bytes] = (
            rng.randbytes if rng is not None else os.urandom
        )
        self._paddings = [_FILL[:n] for n in range(max_padding + 1)]
        self._length_table, self._rejected_bytes = (
            _DEFAULT_LENGTH_TABLES
            if max_padding == DEFAULT_MAX_PADDING
            else _length_tables(max_padding)
        )
        # Upstream text after the last blank line seen, not parsed yet (see feed).
        self._carry = ""
        self._carry_limit = min(_CARRY_LIMIT, self._parser._safe_chars, max_event_chars)
        # An endless iterator of paddings, drawn a batch at a time: a frame costs one
        # C-level next(), not a random call, and zip() can take a whole run at once.
        self._pads = chain.from_iterable(iter(self._draw_paddings, None))
        self._started = False
        self._terminated = False
        self._chunks = 0
        self._chars = 0
        self._reasoning_chunks = 0
        self._reasoning_chars = 0
        self.last_error_code: str | None = None
        """The code of the terminal `error` frame, once one was returned."""
        self.exception: Exception | None = None
        """The unexpected exception that ended the stream with `internal_error`, for logs."""

    @property
    def content_type(self) -> str:
        """The response's content-type for this Reframer's encoder."""
        return self._encoder.content_type

    @property
    def terminated(self) -> bool:
        """True once the terminal frame was returned."""
        return self._terminated

    @property
    def saw_done(self) -> bool:
        """True once the upstream sent `[DONE]`."""
        return self._normalizer.done

    @property
    def model_events(self) -> int:
        """How many upstream events carried model output so far (text, reasoning or a
        tool call). Keep-alive comments, blank lines and unreadable frames add nothing,
        so a caller can tell a model that is producing from one that only keeps the
        connection open."""
        return self._chunks + self._reasoning_chunks + self._normalizer.tool_calls

    @property
    def stats(self) -> ReframerStats:
        """A snapshot of what has been seen and emitted so far."""
        normalizer = self._normalizer
        return ReframerStats(
            chunks=self._chunks,
            chars=self._chars,
            reasoning_chunks=self._reasoning_chunks,
            reasoning_chars=self._reasoning_chars,
            skipped=normalizer.skipped,
            tool_calls=normalizer.tool_calls,
            finish_reason=normalizer.finish_reason,
            usage=None if normalizer.usage is None else dict(normalizer.usage),
        )

    def start(self) -> bytes:
        """The `meta` event, or b"" if it was already sent (or the stream ended)."""
        if self._started or self._terminated:
            return b""
        return self._encode([self._meta()])

    def feed(self, chunk: bytes) -> bytes:
        """The frames for every upstream event `chunk` completes, as one bytes object.

        A line or an event over its cap yields the frames before it and then the
        `error` frame `upstream_malformed`, and ends the stream. Never raises: an unexpected failure
        ends the stream with `internal_error` and is kept on `exception`.
        """
        if self._terminated or self._normalizer.done:
            return b""
        out = [] if self._started else [self._meta()]
        try:
            # While the parser holds no state (no pending line, data or event type),
            # text after the last blank line can complete no event, so it is carried,
            # not parsed yet, and each block up to a blank line holds whole events. A
            # block of nothing but common native events then skips the parser: one
            # regex call reads them all. This is the hot path, hence one long method.
            parser = self._parser
            text = parser._decode_lf(chunk)
            idle = not parser._pending and not parser._data and not parser._type
            if self._carry:  # only ever set while the parser is idle
                text = self._carry + text
            cut = text.rfind("\n\n") + 2
            if cut < 2:
                self._carry = text if idle else ""
                if not idle and text and self._interpret(text, out):
                    return self._encode(out)
            else:
                self._carry = text[cut:]
                block = text[:cut]
                # A block past the parser's safe length might hold a line over the cap;
                # a parser that holds state must read the block itself. Either way the
                # parser is idle again after the block's closing blank line.
                bodies = (
                    native_event_bodies(block)
                    if idle and len(block) <= parser._safe_chars
                    else None
                )
                if bodies is None:
                    if self._interpret(block, out):
                        return self._encode(out)
                else:
                    out.append(self._encoder.json_deltas(bodies, self._pads))
                    self._chunks += len(bodies)
                    if "\\" in block:
                        # An escape makes a body longer than the text it stands for.
                        self._chars += sum(
                            [len(scan_body(body)) if "\\" in body else len(body) for body in bodies]
                        )
                    else:
                        self._chars += sum(map(len, bodies))
            if len(self._carry) > self._carry_limit:
                # Past this the parser takes the carry (it keeps a long line as
                # fragments, where re-copying the carry on every chunk would be
                # quadratic). Kept this small, an idle parser's carry cannot hold a line
                # over the cap; the parser checks the line from here on.
                carry, self._carry = self._carry, ""
                self._interpret(carry, out)
        except Exception as exc:  # the contract is "never raises"
            self.exception = exc
            out = [] if self._started else [self._meta()]
            out.append(self._error("internal_error"))
        # _encode, inlined on the hot path.
        return "".join(out).encode("utf-8", "backslashreplace") if out else b""

    def ping(self) -> bytes:
        """A keep-alive frame, or b"" once the stream has ended."""
        if self._terminated:
            return b""
        out = [] if self._started else [self._meta()]
        out.append(self._encoder.ping())
        return self._encode(out)

    def finish(self) -> bytes:
        """The terminal frame for the end of the upstream: `done` if `[DONE]` was seen,
        else `error` with `upstream_incomplete`. b"" if the stream already ended."""
        if self._terminated:
            return b""
        out = [] if self._started else [self._meta()]
        normalizer = self._normalizer
        if normalizer.done:
            self._terminated = True
            out.append(
                self._encoder.done(
                    finish_reason=normalizer.finish_reason,
                    usage=normalizer.usage,
                    chunks=self._chunks,
                    chars=self._chars,
                    skipped=normalizer.skipped,
                )
            )
        else:
            out.append(self._error("upstream_incomplete"))
        return self._encode(out)

    def fail(self, code: str) -> bytes:
        """The terminal `error` frame with `code` and its generic message, or b"" if the
        stream already ended. A code not in ERROR_MESSAGES becomes `internal_error`, so
        that a client only ever sees documented codes."""
        if self._terminated:
            return b""
        out = [] if self._started else [self._meta()]
        out.append(self._error(code))
        return self._encode(out)

    def _meta(self) -> str:
        self._started = True
        return self._encoder.meta(request_id=self.request_id, model=self.model)

    def _error(self, code: str) -> str:
        if code not in ERROR_MESSAGES:
            code = "internal_error"
        self._terminated = True
        self.last_error_code = code
        return self._encoder.error(
            code=code, message=ERROR_MESSAGES[code], request_id=self.request_id
        )

    def _interpret(self, text: str, out: list[str]) -> bool:
        """The general path; True when the stream is over (a line over the cap, or
        `[DONE]`), so that nothing after it is read."""
        events, overflow = self._parser._interpret(text)
        if events:
            self._emit(events, out)
        if overflow and not self._normalizer.done:
            # [DONE] before the long line has ended the upstream already.
            out.append(self._error("upstream_malformed"))
            return True
        return overflow or self._normalizer.done

    def _emit(self, events: list[RawEvent], out: list[str]) -> None:
        # One iteration per upstream event, with locals instead of attribute lookups.
        normalizer = self._normalizer
        encoder = self._encoder
        delta = encoder.delta
        pads = self._pads
        chunks = self._chunks
        chars = self._chars
        for event_type, data, _ in events:
            if event_type != "message":
                normalizer.skipped += 1
                continue
            text = fast_response(data)
            if text is None:
                text, reasoning = normalizer.frame(data)
                if normalizer.done:
                    break
                if reasoning:
                    out.append(encoder.reasoning(reasoning, next(pads)))
                    self._reasoning_chunks += 1
                    self._reasoning_chars += len(reasoning)
            if text:
                out.append(delta(text, next(pads)))
                chunks += 1
                chars += len(text)
        self._chunks = chunks
        self._chars = chars

    def _draw_paddings(self) -> list[str]:
        """The next batch of paddings (never empty, so the iterator never ends)."""
        lengths = self._random_bytes(_RANDOM_BYTES_PER_REFILL).translate(
            self._length_table, self._rejected_bytes
        )
        # Each byte is rejected with a chance under one half, so an empty batch is
        # all but impossible; it must still not end the iterator.
        return list(map(self._paddings.__getitem__, lengths)) or [self._paddings[0]]

    @staticmethod
    def _encode(out: list[str]) -> bytes:
        # A lone surrogate can only come from a `\udXXX` escape in upstream JSON, and
        # only ever lands inside a JSON string of ours; backslashreplace writes it back
        # as that same escape, so the output stays valid UTF-8 and valid JSON.
        return "".join(out).encode("utf-8", "backslashreplace")

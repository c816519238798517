"""A whole answer read inside the Worker, for responses that are not streamed (OpenAI's
`stream: false`): the model's stream is read through the same lifecycle and Reframer as
a relayed one, with the same deadlines, caps and log lines, and the encoder's one frame
becomes the response body (FFI)."""

from __future__ import annotations

import asyncio
import codecs
import time
from typing import Any

from chat.logs import log
from chat.platform.ffi import JsException, alarm
from chat.stream.lifecycle import StreamLifecycle
from chat.stream.relay import MAX_FEED_BYTES

# The text a collected answer may hold: far above any real answer (MAX_TOKENS tokens of a
# few characters), and a bound on what an upstream that never stops costs in memory.
MAX_COLLECTED_CHARS = 1 << 20


async def collect(upstream: Any, lifecycle: StreamLifecycle, *, log_fields: dict[str, str]) -> str:
    """Everything the lifecycle sends for `upstream`, read to its end or to a deadline;
    the upstream is cancelled when the answer ended before it did."""
    reader = upstream.getReader()
    # Invalid bytes become U+FFFD and a character split across chunks waits, as in the
    # streamed path's decoder (relay.mjs); the core drops the stream's BOM.
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    out = [lifecycle.start(time.monotonic())]
    pending: asyncio.Future[Any] | None = None
    # One timer at a time, always left to fire: a timer cancelled in Pyodide stays active
    # in workerd until it would have fired, and an isolate may have at most 10,000 (a
    # timeout per read reached that on an upstream of many small chunks). A plain future,
    # not a task: the last one is still pending when the answer ends, and a task left
    # pending is reported by Python's collector as destroyed ("Task was destroyed but it is
    # pending!", once per collected answer) when its timer dies with the request.
    ticker: asyncio.Future[None] | None = None
    ended = False
    try:
        while not lifecycle.over:
            if pending is None:
                pending = asyncio.ensure_future(reader.read())
            if ticker is None:
                ticker = _timer(lifecycle.next_tick(time.monotonic()))
            finished, _ = await asyncio.wait({pending, ticker}, return_when=asyncio.FIRST_COMPLETED)
            now = time.monotonic()
            if ticker in finished:
                ticker = None
                out.append(lifecycle.tick(now, client_behind=False))  # only a deadline says anything
            if pending not in finished:
                continue
            read, pending = pending, None
            try:
                result = read.result()
            except JsException:
                ended = True
                out.append(lifecycle.upstream_ended(now, failed=True))
                break
            if result.done:
                ended = True
                out.append(lifecycle.upstream_ended(now, failed=False))
                break
            out.append(_feed(lifecycle, decoder, result.value, now))
            if lifecycle.collected_chars > MAX_COLLECTED_CHARS:
                out.append(lifecycle.overflowed(now))
    finally:
        if pending is not None:
            # The read the cancel below ends fails with "Stream was cancelled": expected,
            # and retrieved here so that asyncio does not report it.
            pending.add_done_callback(lambda read: read.cancelled() or read.exception())
        if not ended:
            try:
                await reader.cancel()  # generation stops; a pending read resolves as done
            except JsException:
                pass
        reader.releaseLock()
    try:
        event, fields = lifecycle.outcome(time.monotonic())
        log(event, **log_fields, **fields)
    except Exception as exc:  # noqa: BLE001 - the record is lost, never the answer
        alarm("internal_error", request_id=log_fields["request_id"], route="collect", detail=type(exc).__name__)
    return "".join(out)


def _feed(lifecycle: StreamLifecycle, decoder: codecs.IncrementalDecoder, chunk: Any, now: float) -> str:
    try:
        data = chunk.to_bytes()
    except Exception as exc:  # noqa: BLE001 - an upstream that sends something other than bytes
        return lifecycle.broken(now, type(exc).__name__)
    out = []
    view = memoryview(data)
    for start in range(0, len(data), MAX_FEED_BYTES):
        out.append(lifecycle.text(decoder.decode(view[start : start + MAX_FEED_BYTES]), now))
        if lifecycle.over:
            break
    return "".join(out)


def _timer(delay: float) -> asyncio.Future[None]:
    """A future that is done after `delay` seconds."""
    loop = asyncio.get_running_loop()
    timer: asyncio.Future[None] = loop.create_future()
    loop.call_later(delay, lambda: timer.done() or timer.set_result(None))
    return timer

"""The response stream: Workers AI's ReadableStream piped through a Python-driven
TransformStream whose bytes come from the stream's lifecycle (chat.stream.lifecycle), which
drives the sans-IO core (sse.Reframer).

This module only moves bytes and events between the JS streams and the lifecycle: the
upstream's chunks, the timer's ticks, the pipe's end, the client leaving. The
transformer's per-chunk half is relay.mjs: it decodes each chunk, hands the text to
`_on_text` and enqueues the text that comes back, so a chunk crosses the FFI as one string
each way (the cheapest crossing Pyodide has; docs/benchmarks.md). One
`StreamRelay` owns everything one response creates (the transformer's proxies, the timer,
the pipe) and releases it in one idempotent `_close()`, reached from every ending, and
from a failure to start at all.

Why pipeTo with preventClose/preventAbort rather than pipeThrough: the terminal event has
to be written after the upstream ends or fails. With pipeThrough an upstream error would
error our readable too and tear the connection with no `error` event; here the pipe's
settlement is observed and the terminal frame enqueued before the readable closes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import js
from workers import import_from_javascript

from chat.logs import log
from chat.platform.ffi import JsException, ProxyScope, js_bytes, js_object
from chat.stream.lifecycle import StreamLifecycle

PIPE_OPTIONS = {"preventClose": True, "preventAbort": True}

# A network chunk larger than this is fed in slices of this size, so one huge chunk never
# costs several times its size in Pyodide's memory at once (its text and output on top
# of its bytes: the wasm heap grows to its peak and never shrinks). relay.mjs slices the
# streamed path's chunks by it; chat/collect.py the collected path's.
MAX_FEED_BYTES = 64 * 1024

_plumbing: Any = None  # relay.mjs, imported on first use (it needs a request's context)


def plumbing() -> Any:
    global _plumbing
    if _plumbing is None:
        _plumbing = import_from_javascript("chat/stream/relay.mjs")
    return _plumbing


class StreamRelay:
    def __init__(
        self,
        *,
        upstream: Any,
        lifecycle: StreamLifecycle,
        log_fields: dict[str, str],
        keep_alive: Callable[[Awaitable[None]], None],
    ) -> None:
        self._upstream = upstream
        self._lifecycle = lifecycle
        self._log_fields = log_fields
        self._keep_alive = keep_alive
        self._controller: Any = None
        self._enqueue: Any = None
        self._proxies = ProxyScope()
        self._tick_proxy: Any = None
        self._timer: Any = None
        self._closed = False
        # Resolved once the upstream's pipe has settled (ended, failed, or cancelled by our
        # own ending): whoever stops the answer can wait for the cancel to be on its way.
        self.settled: asyncio.Future[None] = asyncio.get_event_loop().create_future()

    def readable(self) -> Any:
        """Start relaying; returns the ReadableStream to use as the Response body."""
        try:
            transformer = plumbing().pythonTransformer(
                MAX_FEED_BYTES, self._proxy(self._on_start), self._proxy(self._on_text), self._proxy(self._on_broken),
                self._proxy(self._on_cancel),
            )
            stream = js.TransformStream.new(transformer)
            pipe = self._upstream.pipeTo(stream.writable, js_object(PIPE_OPTIONS))
        except BaseException:
            self._close()  # nothing else would release the proxies and the timer
            raise
        self._keep_alive(self._supervise(pipe))
        log("chat_stream_started", **self._log_fields)
        return stream.readable

    def _proxy(self, function: Callable[..., Any]) -> Any:
        return self._proxies.proxy(function)

    # --- transformer callbacks (called by the JS stream machinery) ------------------------

    def _on_start(self, controller: Any) -> None:
        self._controller = controller
        # Looked up once: each lookup on a JsProxy converts the name and makes a new method
        # proxy. Only Python's own frames (meta, pings, endings) are enqueued from here;
        # relay.mjs enqueues each chunk's output.
        self._enqueue = controller.enqueue
        self._tick_proxy = self._proxy(self._on_tick)
        now = time.monotonic()
        self._send(self._lifecycle.start(now))
        self._schedule_tick(now)

    def _on_text(self, text: str) -> str | None:
        # The upstream's next decoded text (at most 64 KiB of bytes' worth); returns the
        # text to send, or None once nothing more will be sent.
        now = time.monotonic()
        lifecycle = self._lifecycle
        try:
            # The core speaks bytes; the round trip through UTF-8 costs well under a
            # microsecond, and its output is always valid UTF-8.
            out = lifecycle.chunk(text.encode(), now)
        except Exception as exc:  # noqa: BLE001 - a bug must still end the answer with a frame
            out = lifecycle.broken(now, type(exc).__name__)
        if lifecycle.over:
            # A terminal frame went out ([DONE], a cap, a bug): terminating makes the
            # pipe cancel the upstream, so nothing it does afterwards changes anything.
            self._send(out)
            self._terminate()
            return None
        return out.decode()

    def _on_broken(self, detail: str) -> None:
        # An upstream chunk that is not bytes: the answer ends with `internal_error`.
        self._send(self._lifecycle.broken(time.monotonic(), detail))
        self._terminate()

    def stop(self, code: str) -> None:
        """End the answer now with the terminal `error` frame `code`; the pipe then cancels
        the upstream, as after [DONE]."""
        if self._closed or self._lifecycle.over:
            return
        self._send(self._lifecycle.stop(time.monotonic(), code))
        self._terminate()

    def _on_cancel(self) -> None:
        # The client went away: the pipe now cancels the upstream (generation stops).
        self._lifecycle.client_left()

    def _on_tick(self) -> None:
        self._timer = None
        lifecycle = self._lifecycle
        if self._closed or lifecycle.over:
            return
        now = time.monotonic()
        self._send(lifecycle.tick(now, client_behind=self._client_is_behind()))
        if lifecycle.over:
            self._terminate()
        else:
            self._schedule_tick(now)

    def _client_is_behind(self) -> bool:
        # The readable side's queue holds bytes nobody has read: desiredSize is its high
        # water mark (0) minus what is queued. null once the stream has closed.
        desired = self._controller.desiredSize if self._controller is not None else None
        return isinstance(desired, int | float) and desired < 0

    # --- the end ------------------------------------------------------------------------

    async def _supervise(self, pipe: Any) -> None:
        failed = False
        try:
            await pipe
        except JsException:
            failed = True
        try:
            # The upstream ended (or errored, or was cancelled by our own ending): the
            # lifecycle decides whether that still needs a terminal frame.
            now = time.monotonic()
            self._send(self._lifecycle.upstream_ended(now, failed=failed))
            self._terminate()
            event, fields = self._lifecycle.outcome(now)
            log(event, **self._log_fields, **fields)
        finally:
            self._close()
            if not self.settled.done():
                self.settled.set_result(None)

    # --- plumbing -----------------------------------------------------------------------

    def _send(self, data: bytes) -> None:
        if data and self._enqueue is not None:
            try:
                self._enqueue(js_bytes(data))
            except JsException:
                pass  # the client left while we were writing; the cancel callback says so

    def _terminate(self) -> None:
        if self._controller is not None:
            try:
                self._controller.terminate()
            except JsException:
                pass  # already closed by the other side

    def _schedule_tick(self, now: float) -> None:
        delay_ms = max(1, round(self._lifecycle.next_tick(now) * 1000) + 1)
        self._timer = js.setTimeout(self._tick_proxy, delay_ms)

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            js.clearTimeout(self._timer)
        self._proxies.close()

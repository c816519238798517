"""The response stream: Workers AI's ReadableStream piped through a Python-driven
TransformStream that re-frames it with the sans-IO core (sse.Reframer).

This module only moves bytes between JS streams and the Reframer, and decides how a
stream ends. One `StreamRelay` owns everything one response creates (the transformer's
proxies, the timer, the pipe) and releases it in one idempotent `_close()`, reached from
every ending: done, upstream error, idle timeout, malformed upstream, client disconnect,
a client that stopped reading.

Timing rules: only model output resets the idle timer (an upstream that sends nothing but
keep-alives is still silent), and time the upstream spends held back by the client's
backpressure is the client's, not the model's: it never counts as idle. A client that
reads nothing for CLIENT_TIMEOUT_MS while the answer waits on it ends the stream.

Why pipeTo with preventClose/preventAbort rather than pipeThrough: the terminal event has
to be written after the upstream ends or fails. With pipeThrough an upstream error would
error our readable too and tear the connection with no `error` event; here the pipe's
settlement is observed and the terminal frame enqueued before the readable closes.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import js
from pyodide.ffi import JsException, create_proxy, to_js

from sse import Reframer

from .logs import log

PIPE_OPTIONS = {"preventClose": True, "preventAbort": True}

# A network chunk larger than this is fed to the Reframer in slices of this size, so one
# huge chunk never costs several times its size in Pyodide's memory at once (the wasm
# heap grows to its peak and never shrinks).
MAX_FEED_BYTES = 64 * 1024


class StreamRelay:
    def __init__(
        self,
        *,
        upstream: Any,
        reframer: Reframer,
        request_id: str,
        model: str,
        route: str,
        ping_interval_ms: int,
        idle_timeout_ms: int,
        client_timeout_ms: int,
        keep_alive: Callable[[Awaitable[None]], None],
    ) -> None:
        self._upstream = upstream
        self._reframer = reframer
        self._log_fields = {"request_id": request_id, "model": model, "route": route}
        self._ping_interval = ping_interval_ms / 1000
        self._idle_timeout = idle_timeout_ms / 1000
        self._client_timeout = client_timeout_ms / 1000
        self._keep_alive = keep_alive
        self._controller: Any = None
        self._proxies: list[Any] = []
        self._timer: Any = None
        self._began = time.monotonic()
        self._last_model_output = self._began
        self._model_events = 0
        self._last_sent = self._began
        self._stalled_since: float | None = None  # first tick that found the client not reading
        self._first_delta_ms: int | None = None
        self._client_gone = False
        self._closed = False
        self._detail: str | None = None
        self._tick_proxy: Any = None

    def readable(self) -> Any:
        """Start relaying; returns the ReadableStream to use as the Response body."""
        transformer = to_js(
            {"start": self._proxy(self._on_start), "transform": self._proxy(self._on_chunk), "cancel": self._proxy(self._on_cancel)},
            dict_converter=js.Object.fromEntries,
        )
        stream = js.TransformStream.new(transformer)
        pipe = self._upstream.pipeTo(stream.writable, to_js(PIPE_OPTIONS, dict_converter=js.Object.fromEntries))
        self._keep_alive(self._supervise(pipe))
        log("chat_stream_started", **self._log_fields)
        return stream.readable

    def _proxy(self, function: Callable[..., Any]) -> Any:
        proxy = create_proxy(function)
        self._proxies.append(proxy)
        return proxy

    # --- transformer callbacks (called by the JS stream machinery) ------------------------

    def _on_start(self, controller: Any) -> None:
        self._controller = controller
        self._send(self._reframer.start())
        self._tick_proxy = self._proxy(self._on_tick)
        self._schedule_tick()

    def _on_chunk(self, chunk: Any, _controller: Any) -> None:
        now = time.monotonic()
        reframer = self._reframer
        try:
            size = chunk.byteLength
            if size <= MAX_FEED_BYTES:
                out = reframer.feed(chunk.to_bytes())  # never raises: failures become a terminal frame
            else:
                self._feed_in_slices(chunk, size, now)
                out = b""
        except Exception as exc:  # noqa: BLE001 - an upstream that sends something other than bytes
            self._end_with_error("internal_error", detail=type(exc).__name__)
            return
        if reframer.model_events != self._model_events:
            self._model_events = reframer.model_events
            self._last_model_output = now
            if self._first_delta_ms is None and reframer.stats.deltas:
                self._first_delta_ms = round((now - self._began) * 1000)
        if out:
            self._send(out, now)
        if reframer.saw_done and not reframer.terminated:
            # The answer is complete: say so now, and stop reading. Terminating makes the
            # pipe cancel the upstream, so whatever it does after [DONE] changes nothing.
            self._send(reframer.finish(), now)
            self._terminate()
        elif reframer.terminated:  # upstream_malformed (over a cap) or internal_error was sent
            self._end_with_error(None)

    def _feed_in_slices(self, chunk: Any, size: int, now: float) -> None:
        # Each slice's output is sent at once, so a huge chunk's output is never held
        # whole either.
        for start in range(0, size, MAX_FEED_BYTES):
            self._send(self._reframer.feed(chunk.subarray(start, start + MAX_FEED_BYTES).to_bytes()), now)
            if self._reframer.terminated or self._reframer.saw_done:
                break

    def _on_cancel(self, _reason: Any) -> None:
        # The client went away: the pipe now cancels the upstream (generation stops).
        self._client_gone = True

    def _on_tick(self) -> None:
        self._timer = None
        if self._closed or self._reframer.terminated or self._client_gone:
            return
        now = time.monotonic()
        if self._client_is_behind():
            # The upstream is held back by backpressure: its silence is the client's.
            # The idle clock restarts, no ping is queued behind unread data, and only a
            # client that stays behind for the client timeout ends the stream.
            self._last_model_output = now
            if self._stalled_since is None:
                self._stalled_since = now
            elif now - self._stalled_since >= self._client_timeout:
                self._end_with_error("client_timeout")
                return
        else:
            self._stalled_since = None
            if now - self._last_model_output >= self._idle_timeout:
                self._end_with_error("upstream_timeout")
                return
            if now - self._last_sent >= self._ping_interval:
                self._send(self._reframer.ping())
        self._schedule_tick()

    def _client_is_behind(self) -> bool:
        # The readable side's queue holds bytes nobody has read: desiredSize is its high
        # water mark (0) minus what is queued. null once the stream has closed.
        desired = self._controller.desiredSize if self._controller is not None else None
        return isinstance(desired, int | float) and desired < 0

    # --- endings ------------------------------------------------------------------------

    async def _supervise(self, pipe: Any) -> None:
        upstream_failed = False
        try:
            await pipe
        except JsException:
            upstream_failed = True
        try:
            if self._client_gone:
                self._log_end("chat_stream_cancelled")
            elif not self._reframer.terminated:
                # The upstream ended (or errored) and nothing ended the stream before it.
                if upstream_failed:
                    self._send(self._reframer.fail("generation_failed"))
                else:
                    self._send(self._reframer.finish())
                self._terminate()
                self._log_end()
            else:
                self._log_end()  # ended from inside: timeout, malformed upstream or a bug
        finally:
            self._close()

    def _end_with_error(self, code: str | None, detail: str | None = None) -> None:
        """End from inside the relay (timeout, malformed upstream, bug). The terminated
        writable makes the pipe cancel the upstream; _supervise then logs and cleans up."""
        if code is not None:
            self._send(self._reframer.fail(code))
        self._detail = detail
        self._terminate()

    def _log_end(self, event: str | None = None) -> None:
        stats = self._reframer.stats
        error_code = self._reframer.last_error_code
        if event is None:
            event = "chat_stream_failed" if error_code else "chat_stream_completed"
        fields: dict[str, Any] = {
            **self._log_fields,
            "ttft_ms": self._first_delta_ms,
            "duration_ms": self._ms_since_start(),
            "chunks": stats.deltas,
            "chars": stats.chars,
            "skipped": stats.skipped,
            "finish_reason": stats.finish_reason,
            "usage": stats.usage,
        }
        if error_code and event == "chat_stream_failed":
            fields["code"] = error_code
        if self._reframer.exception is not None:
            self._detail = type(self._reframer.exception).__name__  # a bug in the core; no content
        if self._detail:
            fields["detail"] = self._detail
        log(event, **fields)

    # --- plumbing -----------------------------------------------------------------------

    def _send(self, data: bytes, now: float | None = None) -> None:
        """Enqueue protocol bytes; `now` saves the per-chunk path a second clock read."""
        if data and self._controller is not None and not self._client_gone:
            # to_js copies: the stream keeps the chunk by reference after we return.
            self._controller.enqueue(to_js(data))
            self._last_sent = time.monotonic() if now is None else now

    def _terminate(self) -> None:
        if self._controller is not None and not self._client_gone:
            try:
                self._controller.terminate()
            except JsException:
                pass  # already closed by the other side

    def _schedule_tick(self) -> None:
        # One timer, re-armed for the nearest deadline: chunks only note the time, so the
        # hot path never touches timers.
        now = time.monotonic()
        if self._stalled_since is not None:
            # Pings are held and the idle clock stopped while the client is behind: look
            # again after the shorter interval, or when its time is up.
            due = min(now + min(self._ping_interval, self._idle_timeout), self._stalled_since + self._client_timeout)
        else:
            due = min(self._last_sent + self._ping_interval, self._last_model_output + self._idle_timeout)
        delay_ms = max(1, round((due - now) * 1000) + 1)
        self._timer = js.setTimeout(self._tick_proxy, delay_ms)

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            js.clearTimeout(self._timer)
        for proxy in self._proxies:
            proxy.destroy()
        self._proxies.clear()

    def _ms_since_start(self) -> int:
        return round((time.monotonic() - self._began) * 1000)

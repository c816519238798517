"""The response stream: Workers AI's ReadableStream piped through a TransformStream whose
output comes from the stream's lifecycle (chat.stream.lifecycle), which drives the sans-IO
core (sse.Reframer).

One owner per job. relay.mjs owns the stream machinery: the controller, the pipe, the
timer and termination. This module answers it: the upstream's decoded text in, the text
to send out (one string each way per chunk, the cheapest crossing Pyodide has;
docs/benchmarks.md), a tick in, text out, and says with `last(text)` when a text is the
stream's last. Every decision is the lifecycle's. One `StreamRelay` owns the proxies one
response creates and releases them once the pipe has settled, or when it fails to start.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from chat.logs import log
from chat.platform.ffi import JsException, ProxyScope, alarm, import_js_module
from chat.stream.lifecycle import StreamLifecycle

# A network chunk larger than this is fed in slices of this size, so one huge chunk never
# costs several times its size in Pyodide's memory at once (its text and output on top
# of its bytes: the wasm heap grows to its peak and never shrinks). relay.mjs slices the
# streamed path's chunks by it; chat/stream/collect.py the collected path's.
MAX_FEED_BYTES = 64 * 1024

_plumbing: Any = None  # relay.mjs, once load_plumbing() has imported it


async def load_plumbing() -> None:
    """Import relay.mjs (once per isolate): awaited before a StreamRelay is built."""
    global _plumbing
    if _plumbing is None:
        _plumbing = await import_js_module("chat/stream/relay.mjs")


def plumbing() -> Any:
    if _plumbing is None:
        raise RuntimeError("relay.mjs is not loaded: await load_plumbing() before building a StreamRelay")
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
        self._proxies = ProxyScope()
        self._last: Any = None  # relay.mjs's last(): marks a stream's last text
        self._handle: Any = None  # relay.mjs's { readable, settled, end }
        # Resolved once the upstream's pipe has settled (ended, failed, or cancelled by our
        # own ending): whoever stops the answer can wait for the cancel to be on its way.
        self.settled: asyncio.Future[None] = asyncio.get_event_loop().create_future()

    def readable(self) -> Any:
        """Start relaying; returns the ReadableStream to use as the Response body."""
        try:
            js_relay = plumbing()
            self._last = js_relay.last
            proxy = self._proxies.proxy
            self._handle = js_relay.relay(
                self._upstream, MAX_FEED_BYTES, proxy(self._on_start), proxy(self._on_text), proxy(self._on_tick),
                proxy(self._on_broken), proxy(self._on_ended), proxy(self._on_delay), proxy(self._on_left),
            )
        except BaseException:
            self._proxies.close()  # nothing else would release them
            raise
        self._keep_alive(self._supervise(self._handle.settled))
        log("chat_stream_started", **self._log_fields)
        return self._handle.readable

    def stop(self, code: str) -> None:
        """End the answer now with the terminal `error` frame `code`; the pipe then cancels
        the upstream, as after [DONE]."""
        if self._handle is None or self._lifecycle.over:
            return
        self._handle.end(self._lifecycle.stop(time.monotonic(), code))

    # --- relay.mjs's callbacks ----------------------------------------------------------

    def _on_start(self) -> str:
        return self._answer(self._lifecycle.start(time.monotonic()))

    def _on_text(self, text: str) -> Any:
        # The upstream's next decoded text (at most 64 KiB of bytes' worth): the hot path.
        lifecycle = self._lifecycle
        try:
            out = lifecycle.text(text, time.monotonic())
        except Exception as exc:  # noqa: BLE001 - a bug must still end the answer with a frame
            out = lifecycle.broken(time.monotonic(), type(exc).__name__)
        # A terminal frame went out ([DONE], a cap, a bug): the stream ends there, and
        # terminating it makes the pipe cancel the upstream.
        return self._last(out) if lifecycle.over else out

    def _on_tick(self, client_behind: bool) -> Any:
        return self._answer(self._lifecycle.tick(time.monotonic(), client_behind=bool(client_behind)))

    def _on_delay(self) -> int:
        return max(1, round(self._lifecycle.next_tick(time.monotonic()) * 1000) + 1)

    def _on_broken(self, detail: str) -> Any:
        # An upstream chunk that is not bytes: the answer ends with `internal_error`.
        return self._last(self._lifecycle.broken(time.monotonic(), str(detail)))

    def _on_left(self) -> None:
        # The client went away: the pipe now cancels the upstream (generation stops).
        self._lifecycle.client_left()

    def _on_ended(self, failed: bool) -> str:
        # The upstream ended (or errored, or was cancelled by our own ending): the
        # lifecycle decides whether that still needs a terminal frame. Called once.
        now = time.monotonic()
        lifecycle = self._lifecycle
        try:
            out = lifecycle.upstream_ended(now, failed=bool(failed))
        except Exception as exc:  # noqa: BLE001 - a bug must still end the answer with a frame
            out = lifecycle.broken(now, type(exc).__name__)  # if this raises too, relay.mjs cuts the stream
        try:
            event, fields = lifecycle.outcome(now)
            log(event, **self._log_fields, **fields)
        except Exception as exc:  # noqa: BLE001 - the record is lost, never the answer's end
            alarm("internal_error", request_id=self._log_fields["request_id"], route="relay", detail=type(exc).__name__)
        return out

    def _answer(self, out: str) -> Any:
        return self._last(out) if self._lifecycle.over else out

    # --- the end ------------------------------------------------------------------------

    async def _supervise(self, settled: Any) -> None:
        try:
            await settled
        except JsException as error:
            alarm("internal_error", request_id=self._log_fields["request_id"], route="relay",
                  detail=str(getattr(error, "name", "JsException")))
        finally:
            # relay.mjs calls nothing of ours after `settled`.
            self._proxies.close()
            if not self.settled.done():
                self.settled.set_result(None)

"""The rules of one response stream's life, sans-IO: when to ping, when the model counts
as silent, when a client that stopped reading is dropped, how the stream ends and what is
logged about it. Every call takes the time (monotonic seconds) and returns what to
send, as text, so the rules run on CPython with a fake clock; the relay only forwards
the upstream's text, ticks and endings to it from the JS streams.

Timing rules:
- only model output (text, reasoning, a tool call) resets the idle timer: an upstream
  that sends nothing but keep-alives is still silent;
- time the upstream spends held back by the client's backpressure is the client's: it
  never counts as idle, and no ping is queued behind unread bytes;
- a client that reads nothing for the client timeout while the answer waits on it ends
  the stream (`client_timeout`);
- after the upstream's `[DONE]` the stream is complete at once, whatever follows.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from sse import Reframer

__all__ = ["Flow", "StreamLifecycle", "Timeouts"]


class Flow(enum.Enum):
    """How one response stream is going. Every move is in _MOVES."""

    FLOWING = "flowing"  # the client reads what is sent
    HELD = "held"  # bytes sent wait unread: the client holds the upstream back
    ENDED = "ended"  # a terminal frame went out
    ABANDONED = "abandoned"  # the client left before it


class Turn(enum.Enum):
    CLIENT_BEHIND = "client_behind"  # a tick found bytes unread
    CLIENT_READ = "client_read"  # the client made room (a chunk got through, or a tick found nothing unread)
    TERMINAL = "terminal"
    CLIENT_LEFT = "client_left"


# Every transition in one table, as in h11's _state.py. A stream that is over stays over.
_MOVES: dict[Flow, dict[Turn, Flow]] = {
    Flow.FLOWING: {Turn.CLIENT_BEHIND: Flow.HELD, Turn.CLIENT_READ: Flow.FLOWING, Turn.TERMINAL: Flow.ENDED,
                   Turn.CLIENT_LEFT: Flow.ABANDONED},
    Flow.HELD: {Turn.CLIENT_BEHIND: Flow.HELD, Turn.CLIENT_READ: Flow.FLOWING, Turn.TERMINAL: Flow.ENDED,
                Turn.CLIENT_LEFT: Flow.ABANDONED},
    Flow.ENDED: {Turn.CLIENT_BEHIND: Flow.ENDED, Turn.CLIENT_READ: Flow.ENDED, Turn.TERMINAL: Flow.ENDED,
                 Turn.CLIENT_LEFT: Flow.ENDED},
    Flow.ABANDONED: {Turn.CLIENT_BEHIND: Flow.ABANDONED, Turn.CLIENT_READ: Flow.ABANDONED, Turn.TERMINAL: Flow.ABANDONED,
                     Turn.CLIENT_LEFT: Flow.ABANDONED},
}


@dataclass(frozen=True, kw_only=True)
class Timeouts:
    """In seconds: PING_INTERVAL_MS, IDLE_TIMEOUT_MS and CLIENT_TIMEOUT_MS."""

    ping_interval: float
    idle: float
    client: float


class StreamLifecycle:
    """Drives one Reframer through one response. `flow` says how it goes (Flow); `over`
    turns true once nothing more will be sent (a terminal frame went out, or the client
    left): the caller then stops reading the upstream. `outcome()` is the log record of
    how it ended."""

    def __init__(self, reframer: Reframer, timeouts: Timeouts, *, now: float) -> None:
        self._reframer = reframer
        self._whole_event = reframer.feed_whole_event  # looked up once: it runs per token
        self.over = False
        """True once nothing more will be sent; a plain attribute, read per chunk."""
        self._timeouts = timeouts
        self._began = now
        self._last_model_output = now
        self._last_sent = now
        self._model_events = 0
        self._first_delta_at: float | None = None
        self.flow = Flow.FLOWING
        self._behind_since = now  # while HELD: the first tick that found the client not reading
        self._detail: str | None = None

    def start(self, now: float) -> str:
        """The first frame (`meta`)."""
        return self._sent(self._reframer.start(), now)

    def text(self, text: str, now: float) -> str:
        """What the upstream's next text gives to send; with `[DONE]` in it, the `done`
        frame too."""
        out = self._whole_event(text)
        if out is None:
            return self._any_text(text, now)
        # One event of model text, the commonest input: the stream goes on.
        self._model_events += 1
        self._last_model_output = now
        if out:  # a collecting encoder sends nothing until the end
            self._last_sent = now
        if self.flow is Flow.HELD:
            self._move(Turn.CLIENT_READ)  # a chunk got through, so the client had made room for it
        if self._first_delta_at is None and self._reframer.deltas:
            self._first_delta_at = now
        return out

    def _any_text(self, text: str, now: float) -> str:
        reframer = self._reframer
        out = reframer.feed(text)
        if reframer.model_events != self._model_events:
            self._model_events = reframer.model_events
            self._last_model_output = now
            if self._first_delta_at is None and reframer.deltas:
                self._first_delta_at = now
        if self.flow is Flow.HELD:
            self._move(Turn.CLIENT_READ)  # a chunk got through, so the client had made room for it
        if reframer.saw_done and not reframer.terminated:
            out += reframer.finish()
        return self._sent(out, now)

    def tick(self, now: float, *, client_behind: bool) -> str:
        """A ping, a timeout's `error` frame, or "". `client_behind`: bytes already sent
        wait unread, so the upstream is held back by the client."""
        if self.over:
            return ""
        timeouts = self._timeouts
        if client_behind:
            self._last_model_output = now  # the silence is the client's
            if self.flow is not Flow.HELD:
                self._move(Turn.CLIENT_BEHIND)
                self._behind_since = now
            elif now - self._behind_since >= timeouts.client:
                return self._sent(self._reframer.fail("client_timeout"), now)
            return ""
        self._move(Turn.CLIENT_READ)
        if now - self._last_model_output >= timeouts.idle:
            return self._sent(self._reframer.fail("upstream_timeout"), now)
        if now - self._last_sent >= timeouts.ping_interval:
            return self._sent(self._reframer.ping(), now)
        return ""

    def next_tick(self, now: float) -> float:
        """Seconds until the nearest deadline; one timer re-armed for it is enough, so
        chunks only note the time and the hot path never touches timers."""
        timeouts = self._timeouts
        if self.flow is Flow.HELD:
            # Pings are held and the idle clock stopped while the client is behind: look
            # again after the shorter interval, or when its time is up.
            due = min(now + min(timeouts.ping_interval, timeouts.idle), self._behind_since + timeouts.client)
        else:
            due = min(self._last_sent + timeouts.ping_interval, self._last_model_output + timeouts.idle)
        return max(0.001, due - now)

    def upstream_ended(self, now: float, *, failed: bool) -> str:
        """The terminal frame for an upstream that closed (`done` or `upstream_incomplete`)
        or failed (`generation_failed`), unless the stream is over already."""
        if self.over:
            return ""
        reframer = self._reframer
        return self._sent(reframer.fail("generation_failed") if failed else reframer.finish(), now)

    @property
    def collected_chars(self) -> int:
        """Characters of text and reasoning streamed so far (what a collecting encoder holds)."""
        stats = self._reframer.stats
        return stats.chars + stats.reasoning_chars

    def overflowed(self, now: float) -> str:
        """The `upstream_malformed` frame for an answer longer than its reader can hold."""
        return self._sent(self._reframer.fail("upstream_malformed"), now)

    def stop(self, now: float, code: str) -> str:
        """The terminal `error` frame for an answer ended on the server's side (a stop
        request, nobody reading), unless the stream is over already."""
        if self.over:
            return ""
        return self._sent(self._reframer.fail(code), now)

    def client_left(self) -> None:
        self._move(Turn.CLIENT_LEFT)

    def broken(self, now: float, detail: str) -> str:
        """The `internal_error` frame for a failure of the edge itself (an upstream chunk
        that is not bytes); `detail` goes to the log, never to the client."""
        self._detail = detail
        return self._sent(self._reframer.fail("internal_error"), now)

    def outcome(self, now: float) -> tuple[str, dict[str, Any]]:
        """The log event and its fields: counts, timings, usage; never content."""
        reframer = self._reframer
        stats = reframer.stats
        fields: dict[str, Any] = {
            "ttft_ms": None if self._first_delta_at is None else _ms(self._first_delta_at - self._began),
            "duration_ms": _ms(now - self._began),
            "chunks": stats.deltas,
            "chars": stats.chars,
            "skipped": stats.skipped,
            "finish_reason": stats.finish_reason,
            "usage": stats.usage,
        }
        if stats.tool_calls:
            fields["tool_calls"] = stats.tool_calls  # how many, never their names or arguments
        if self.flow is Flow.ABANDONED and reframer.last_error_code is None and not reframer.terminated:
            event = "chat_stream_cancelled"
        elif reframer.last_error_code is not None:
            event = "chat_stream_failed"
            fields["code"] = reframer.last_error_code
        else:
            event = "chat_stream_completed"
        detail = type(reframer.exception).__name__ if reframer.exception is not None else self._detail
        if detail:
            fields["detail"] = detail  # a bug in the core or the edge: its type, no content
        return event, fields

    def _sent(self, out: str, now: float) -> str:
        if out:
            self._last_sent = now
        # Every way to a terminal frame passes here.
        if self._reframer.terminated:
            self._move(Turn.TERMINAL)
        return out

    def _move(self, turn: Turn) -> None:
        self.flow = _MOVES[self.flow][turn]
        self.over = self.flow is Flow.ENDED or self.flow is Flow.ABANDONED


def _ms(seconds: float) -> int:
    return round(seconds * 1000)

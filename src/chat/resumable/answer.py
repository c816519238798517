"""The life of the answer one Durable Object keeps, as a pure state machine.

Every decision the object makes lives here; the object (durable_object) and its readers
(readers) carry them out against storage and the JS streams. Time is passed in: wall
time (`time.time()`) where it is stored or armed as an alarm, monotonic time for
durations within one instance. Plain Python, so every transition is tested on CPython.

    (none) --begin--> live, producing --ended--> ended --expire--> (none)
                        |                          ^
                        +-- instance restarted ----+ (interrupted: one terminal `error`)

A new turn of a UI chat begins again from any state, after the answer being made has
been stopped. Each answer has a serial that never repeats within an instance, so a
reader always knows whether the answer it was reading is still there.

Every reader ends with exactly one terminal event: the answer's own (`done` or `error`,
stored as its last event) when it read to the end, else one it is given when the answer
it was reading went away: `stopped` when a new turn replaced it, `expired` when its time
ran out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from chat.resumable.formats import AnswerKind


@dataclass(frozen=True, kw_only=True, slots=True)
class AnswerRow:
    """How the stored answer stands: the one row of the `answer` table."""

    kind: AnswerKind
    request_id: str
    serial: int
    live: bool
    ended_at: float | None = None  # wall time
    # A stored response of /v1/responses (chat.resumable.client): the Response object as it
    # began (JSON), whether it runs in the background, and who may touch it.
    head: str | None = None
    background: bool = False
    owner: str = ""

    def owned_by(self, owner: str) -> bool:
        """Whether `owner` (chat.resumable.client, "stored responses") may touch this stored response."""
        import hmac

        return self.kind is AnswerKind.RESPONSES and hmac.compare_digest(self.owner.encode(), owner.encode())


@dataclass(frozen=True, kw_only=True, slots=True)
class Timing:
    grace_s: float  # how long a live answer nobody reads goes on (RESUME_GRACE_MS)
    ttl_s: float  # how long an ended answer's events are kept (RESUME_TTL_S)
    ping_s: float  # how often waiting readers are pinged
    # How long a stored response of /v1/responses is kept (RESPONSE_TTL_S): past `ttl_s` its
    # events but the terminal are deleted (it is compacted), and the Response, its input and
    # its items stay until this (0: no longer than its events).
    response_ttl_s: float = 0


class Alarm(Enum):
    NOTHING = "nothing"  # nothing stored
    INTERRUPT = "interrupt"  # live, but nobody makes it here: end it with `interrupted`
    REARM = "rearm"  # not yet: arm again at `Answer.alarm_at`
    COMPACT = "compact"  # a stored response's events are past their time: keep its terminal only
    EXPIRE = "expire"  # its time is up: delete it


class Read(Enum):
    NO_CONTENT = "no_content"  # 204: the reader has all of it, or (active only) none is being made
    NOT_FOUND = "not_found"  # 404: no answer, or it expired
    INVALID_EVENT_ID = "invalid_event_id"  # 400: an id this answer never sent
    EVENTS_GONE = "events_gone"  # 400: a compacted stored response has no events to stream
    SERVE = "serve"  # a reader from the id on


class Stop(Enum):
    NOT_FOUND = "not_found"
    STOP_PRODUCER = "stop_producer"  # the answer being made stops with `stopped`
    INTERRUPT = "interrupt"  # live, but nobody makes it here
    NOTHING = "nothing"  # it already ended


class Tick(Enum):
    NOTHING = "nothing"
    PING = "ping"  # wake the waiting readers with a keep-alive
    ABANDON = "abandon"  # nobody has read it for the grace period: stop it with `abandoned`
    TIME_LIMIT = "time_limit"  # a background response ran for BACKGROUND_LIMIT_S: stop it


# How long a background response may run. Nobody needs to read it, so the grace period does
# not end it; this does, with the idle timeout (no token for IDLE_TIMEOUT_MS), the budget
# (max_output_tokens) and the held answer's caps. A Workers AI answer of 4,096 tokens takes
# well under this; an operator who raises MAX_TOKENS for long work has room.
BACKGROUND_LIMIT_S = 15 * 60


@dataclass(frozen=True, kw_only=True, slots=True)
class ReaderStep:
    """What a reader of answer `serial`, which has every event up to its cursor, does next:
    SEND the events after its cursor, WAIT for more, END (it has the terminal event), or
    CUT: send the terminal `error` `code` (the answer it read went away) and end."""

    action: str
    code: str | None = None


SEND, WAIT, END = ReaderStep(action="send"), ReaderStep(action="wait"), ReaderStep(action="end")


class Answer:
    """The state of one object's answer. `row` is what storage holds (None: nothing);
    `last_id` the id of its last event stored durably, the last a reader may be given;
    `written_id` the id of the last one written, which storage may still lose (a restart
    before its commit): the next event's id follows it. `terminal_stored`: the last
    event written is the answer's terminal one."""

    def __init__(self, row: AnswerRow | None, *, last_id: int, timing: Timing, terminal_stored: bool = False,
                 compacted: bool = False) -> None:
        self.row = row
        self.compacted = compacted  # a stored response that keeps its terminal event only
        self.last_id = last_id
        self.written_id = last_id
        self.terminal_stored = terminal_stored
        self.timing = timing
        self.producing = False  # this instance is making the answer (a restart loses that)
        self.readers = 0
        self.unread_since: float | None = None  # monotonic: when the last reader left
        self.last_ping = 0.0  # monotonic
        self.began = 0.0  # monotonic: when this instance began the answer
        self.alarm_at: float | None = None  # wall time the alarm should be armed at
        # Serials are never reused within an instance (they restart from storage after an
        # expiry), and a reader of an answer that expired is told so, not "stopped".
        self._last_serial = 0 if row is None else row.serial
        self._expired_through = 0
        self._gone_code = "expired"  # what cut the answers through _expired_through

    # --- the answer ------------------------------------------------------------------

    def begin(self, kind: AnswerKind, request_id: str, *, now: float, mono: float, head: str | None = None,
              background: bool = False, owner: str = "") -> AnswerRow:
        """A new answer starts being made (the one before it, if any, was stopped)."""
        self._last_serial += 1
        self.row = AnswerRow(kind=kind, request_id=request_id, serial=self._last_serial, live=True, head=head,
                             background=background, owner=owner)
        self.began = mono
        self.last_id = self.written_id = 0
        self.terminal_stored = self.compacted = False
        self.producing = True
        # Until its first reader attaches: at once, for the request that began it.
        self.unread_since = mono
        self.last_ping = mono
        self.alarm_at = now + self.timing.grace_s
        return self.row

    def written(self, last_id: int, *, terminal: bool = False) -> None:
        """Events up to `last_id` are written; `terminal`: the last is the terminal event."""
        self.written_id = last_id
        self.terminal_stored = terminal

    def durable(self, last_id: int) -> None:
        """Events up to `last_id` are durable: readers may have them."""
        self.last_id = max(self.last_id, min(last_id, self.written_id))

    @property
    def unterminated(self) -> bool:
        """The live answer's producer is done but stored no terminal event (a bug cut its
        stream): one must be stored before it ends, or every reader and replay would take
        the cut answer for a finished one."""
        return self.row is not None and self.row.live and not self.terminal_stored

    def ended(self, *, now: float) -> AnswerRow:
        """The answer's terminal event is stored (by its producer, or `interrupted` by
        this instance for one a previous instance was making): it is kept for the TTL."""
        if self.row is None:
            raise RuntimeError("no answer to end")
        self.row = replace(self.row, live=False, ended_at=now)
        self.producing = False
        self.unread_since = None
        self.alarm_at = now + self.timing.ttl_s
        return self.row

    def producer_lost(self) -> None:
        """The producer stopped without an end of its own (it is being replaced)."""
        self.producing = False

    @property
    def orphaned(self) -> bool:
        """Live in storage, but nobody here makes it: a previous instance was (eviction,
        deploy, restart). It needs its terminal `interrupted` before anything else."""
        return self.row is not None and self.row.live and not self.producing

    def alarm(self, *, now: float) -> Alarm:
        row = self.row
        if row is None:
            return Alarm.NOTHING
        if row.live:
            if not self.producing:
                return Alarm.INTERRUPT
            self.alarm_at = now + self.timing.grace_s  # the heartbeat while it is made
            return Alarm.REARM
        ended_at = row.ended_at or now
        compacts_at = ended_at + self.timing.ttl_s
        expires_at = max(compacts_at, ended_at + self.timing.response_ttl_s) if row.kind is AnswerKind.RESPONSES else compacts_at
        if now >= expires_at:
            return Alarm.EXPIRE
        if expires_at > compacts_at and not self.compacted:
            if now >= compacts_at:
                self.compacted = True
                self.alarm_at = expires_at
                return Alarm.COMPACT
            self.alarm_at = compacts_at
            return Alarm.REARM
        self.alarm_at = expires_at
        return Alarm.REARM

    def expire(self, *, code: str = "expired") -> None:
        """Storage was deleted: its time was up, or (`code` "deleted") its client deleted it.
        A reader still reading it is cut with `code`."""
        if self.row is not None:
            self._expired_through = self.row.serial
            self._gone_code = code
        self.row = None
        self.last_id = self.written_id = 0
        self.terminal_stored = False
        self.compacted = False
        self.producing = False
        self.alarm_at = None

    # --- requests ---------------------------------------------------------------------

    def read(self, after: int, *, active_only: bool) -> Read:
        """A reader asks for the events after `after` (check `orphaned` first)."""
        row = self.row
        if active_only:
            return Read.SERVE if row is not None and row.live and self.producing else Read.NO_CONTENT
        if row is None:
            return Read.NOT_FOUND
        if after > self.last_id:
            return Read.INVALID_EVENT_ID  # no such event was ever sent
        if after == self.last_id and not row.live:
            # The reader has the whole answer: 204 is what tells a browser's EventSource
            # to stop reconnecting.
            return Read.NO_CONTENT
        # Compacted, only the terminal is left: a reader lacking more than that cannot have it.
        return Read.EVENTS_GONE if self.compacted and after < self.last_id - 1 else Read.SERVE

    def stop(self) -> Stop:
        if self.row is None:
            return Stop.NOT_FOUND
        if self.producing:
            return Stop.STOP_PRODUCER
        return Stop.INTERRUPT if self.row.live else Stop.NOTHING

    # --- readers ----------------------------------------------------------------------

    def attach(self) -> None:
        self.readers += 1
        self.unread_since = None

    def detach(self, *, mono: float) -> None:
        self.readers = max(0, self.readers - 1)
        if self.readers == 0 and self.producing:
            self.unread_since = mono  # the answer ends after the grace period

    def reader_step(self, serial: int, cursor: int, *, has_terminal: bool = False) -> ReaderStep:
        """`has_terminal`: the reader already sent its answer's terminal event, which the
        row may not show yet (the producer's end is reported after its last write) and
        no longer shows once a new turn or the expiry replaced it."""
        if has_terminal:
            return END
        row = self.row
        if row is None or row.serial != serial:
            expired = row is None or serial <= self._expired_through
            return ReaderStep(action="cut", code=self._gone_code if expired else "stopped")
        if self.compacted and cursor < self.last_id - 1:
            # It was reading when the events before the terminal went: the ones it lacks expired.
            return ReaderStep(action="cut", code="expired")
        if cursor < self.last_id:
            return SEND
        return WAIT if row.live else END

    def tick(self, *, mono: float) -> Tick:
        """The answer's one ticker, while it is made."""
        if not self.producing:
            return Tick.NOTHING
        if self.row is not None and self.row.background:
            if mono - self.began >= BACKGROUND_LIMIT_S:
                return Tick.TIME_LIMIT
        elif self.unread_since is not None and mono - self.unread_since >= self.timing.grace_s:
            return Tick.ABANDON
        if mono - self.last_ping >= self.timing.ping_s:
            self.last_ping = mono
            return Tick.PING
        return Tick.NOTHING

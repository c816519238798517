"""The resumable answer's state machine (chat.resumable.answer), one transition at a time,
and the messages between the Worker and its Durable Object (chat.resumable.protocol)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from chat.model.call import ModelCall
from chat.resumable.answer import END, SEND, WAIT, Alarm, Answer, AnswerRow, Read, ReaderStep, Stop, Tick, Timing
from chat.resumable.formats import AnswerKind, ReaderFormat
from chat.resumable.protocol import Failure, MalformedOrder, ReadOrder, StartOrder
from chat.web.errors import ApiError
from sse import StoredEvent

TIMING = Timing(grace_s=60.0, ttl_s=600.0, ping_s=15.0)
NOW = 1_800_000_000.0  # wall time
MONO = 100.0  # monotonic time


def stored(answer: Answer, last_id: int, *, terminal: bool = False) -> None:
    """Events up to `last_id` written, and durable (what the object hands its readers)."""
    answer.written(last_id, terminal=terminal)
    answer.durable(last_id)


def fresh() -> Answer:
    return Answer(None, last_id=0, timing=TIMING)


def live(events: int = 3) -> Answer:
    answer = fresh()
    answer.begin(AnswerKind.CHAT, "r1", now=NOW, mono=MONO)
    answer.attach()
    stored(answer, events)
    return answer


def ended(events: int = 4) -> Answer:
    answer = live(events)
    answer.ended(now=NOW + 10)
    return answer


def cut(code: str) -> ReaderStep:
    return ReaderStep(action="cut", code=code)


# --- nothing stored ---------------------------------------------------------------------


def test_with_nothing_stored_a_read_is_404_a_stop_is_404_and_the_alarm_does_nothing():
    answer = fresh()
    assert answer.read(0, active_only=False) is Read.NOT_FOUND
    assert answer.read(0, active_only=True) is Read.NO_CONTENT
    assert answer.stop() is Stop.NOT_FOUND
    assert answer.alarm(now=NOW) is Alarm.NOTHING
    assert not answer.orphaned


# --- begin: live and producing ----------------------------------------------------------


def test_begin_makes_a_live_answer_with_the_next_serial_and_arms_the_heartbeat():
    answer = fresh()
    row = answer.begin(AnswerKind.UI, "r1", now=NOW, mono=MONO)
    assert row == AnswerRow(kind=AnswerKind.UI, request_id="r1", serial=1, live=True)
    assert answer.producing and answer.last_id == 0 and answer.alarm_at == NOW + TIMING.grace_s
    assert answer.unread_since == MONO, "unread until its first reader attaches"
    answer.attach()
    assert answer.unread_since is None
    assert answer.begin(AnswerKind.UI, "r2", now=NOW, mono=MONO).serial == 2


def test_the_serial_goes_on_from_the_stored_row():
    stored = AnswerRow(kind=AnswerKind.CHAT, request_id="r0", serial=7, live=False, ended_at=NOW)
    answer = Answer(stored, last_id=5, timing=TIMING)
    assert answer.begin(AnswerKind.CHAT, "r1", now=NOW, mono=MONO).serial == 8


def test_a_live_answer_is_served_from_any_id_it_sent_and_refuses_one_it_did_not():
    answer = live(events=3)
    assert answer.read(0, active_only=False) is Read.SERVE
    assert answer.read(3, active_only=False) is Read.SERVE, "the reader waits for the next event"
    assert answer.read(4, active_only=False) is Read.INVALID_EVENT_ID
    assert answer.read(0, active_only=True) is Read.SERVE


def test_a_live_answer_is_stopped_by_its_producer_and_the_alarm_is_its_heartbeat():
    answer = live()
    assert answer.stop() is Stop.STOP_PRODUCER
    assert answer.alarm(now=NOW + 30) is Alarm.REARM and answer.alarm_at == NOW + 30 + TIMING.grace_s


# --- readers and the ticker -------------------------------------------------------------


def test_a_reader_sends_what_it_lacks_waits_while_live_and_ends_after_the_last_event():
    answer = live(events=3)
    assert answer.reader_step(1, 0) == SEND
    assert answer.reader_step(1, 3) == WAIT
    stored(answer, 4)
    assert answer.reader_step(1, 3) == SEND
    answer.ended(now=NOW)
    assert answer.reader_step(1, 3) == SEND, "the terminal event is still to be read"
    assert answer.reader_step(1, 4) == END


def test_the_ticker_pings_each_interval_and_abandons_an_answer_unread_for_the_grace():
    answer = live()
    assert answer.tick(mono=MONO + 1) is Tick.NOTHING
    assert answer.tick(mono=MONO + TIMING.ping_s) is Tick.PING
    assert answer.tick(mono=MONO + TIMING.ping_s + 1) is Tick.NOTHING, "the next ping is an interval later"
    answer.detach(mono=MONO + 20)
    assert answer.readers == 0 and answer.unread_since == MONO + 20
    assert answer.tick(mono=MONO + 20 + TIMING.grace_s - 1) is not Tick.ABANDON
    assert answer.tick(mono=MONO + 20 + TIMING.grace_s) is Tick.ABANDON
    answer.attach()
    assert answer.tick(mono=MONO + 1000) is not Tick.ABANDON, "a reader came back"


def test_a_reader_leaving_an_ended_answer_starts_no_grace_and_the_count_never_goes_negative():
    answer = ended()
    answer.detach(mono=MONO)
    answer.detach(mono=MONO)
    assert answer.readers == 0 and answer.unread_since is None
    assert answer.tick(mono=MONO + 10_000) is Tick.NOTHING


# --- ended: kept for the TTL ------------------------------------------------------------


def test_the_end_keeps_the_answer_for_the_ttl_and_serves_it_until_the_reader_has_it_all():
    answer = ended(events=4)
    assert answer.row is not None and not answer.row.live and answer.row.ended_at == NOW + 10
    assert not answer.producing and answer.alarm_at == NOW + 10 + TIMING.ttl_s
    assert answer.read(3, active_only=False) is Read.SERVE
    assert answer.read(4, active_only=False) is Read.NO_CONTENT
    assert answer.read(5, active_only=False) is Read.INVALID_EVENT_ID, "past the end, as on a live answer"
    assert answer.read(0, active_only=True) is Read.NO_CONTENT, "the AI SDK resumes only an answer in progress"
    assert answer.stop() is Stop.NOTHING


def test_the_alarm_expires_an_ended_answer_only_once_its_ttl_is_over():
    answer = ended()
    assert answer.alarm(now=NOW + 10 + TIMING.ttl_s - 1) is Alarm.REARM
    assert answer.alarm_at == NOW + 10 + TIMING.ttl_s
    assert answer.alarm(now=NOW + 10 + TIMING.ttl_s) is Alarm.EXPIRE
    answer.expire()
    assert answer.row is None and answer.read(0, active_only=False) is Read.NOT_FOUND and answer.alarm_at is None


# --- every reader gets one terminal event -----------------------------------------------


def test_a_reader_of_an_answer_that_expired_under_it_is_cut_with_expired():
    answer = ended(events=2000)
    assert answer.reader_step(1, 1936) == SEND
    answer.expire()
    assert answer.reader_step(1, 1936) == cut("expired")


def test_a_reader_of_an_answer_a_new_turn_replaced_is_cut_with_stopped():
    answer = live(events=10)
    answer.producer_lost()
    answer.begin(AnswerKind.UI, "r2", now=NOW, mono=MONO)
    assert answer.reader_step(1, 4) == cut("stopped")
    assert answer.reader_step(2, 0) == WAIT


def test_a_reader_that_sent_its_terminal_event_ends_whatever_happened_since():
    # The producer's end is reported after its last write: a reader can send the terminal
    # event while the row is still live, and a new turn or the expiry can come before its
    # next pull. It must not be given a second terminal.
    answer = live(events=10)
    assert answer.reader_step(1, 10, has_terminal=True) == END
    answer.producer_lost()
    answer.begin(AnswerKind.UI, "r2", now=NOW, mono=MONO)
    assert answer.reader_step(1, 10, has_terminal=True) == END
    answer.expire()
    assert answer.reader_step(1, 10, has_terminal=True) == END


def test_each_kind_knows_its_terminal_event():
    def event(id: int, type: str, data: str) -> StoredEvent:
        return StoredEvent(id=id, type=type, data=data)

    assert AnswerKind.CHAT.ends_with_terminal([event(1, "delta", "{}"), event(2, "done", "{}")])
    assert AnswerKind.CHAT.ends_with_terminal([event(3, "error", "{}")])
    assert not AnswerKind.CHAT.ends_with_terminal([event(1, "delta", "{}")]) and not AnswerKind.CHAT.ends_with_terminal([])
    assert AnswerKind.UI.ends_with_terminal([event(4, "message", '{"type":"finish"}'), event(5, "message", "[DONE]")])
    assert not AnswerKind.UI.ends_with_terminal([event(4, "message", '{"type":"error","errorText":"x"}')])


def test_a_reader_is_given_only_what_storage_holds_durably():
    answer = live(events=3)
    answer.written(5)
    assert answer.reader_step(1, 3) == WAIT, "events 4 and 5 could still be lost by a restart"
    assert answer.read(5, active_only=False) is Read.INVALID_EVENT_ID, "no reader can have them yet"
    answer.durable(4)
    assert answer.reader_step(1, 3) == SEND and answer.last_id == 4
    answer.durable(9)
    assert answer.last_id == 5, "never past what was written"
    answer.durable(2)
    assert answer.last_id == 5, "a late step never takes back what readers may have"


def test_serials_never_repeat_after_an_expiry_so_an_old_reader_is_never_fed_a_new_answer():
    answer = ended()
    answer.expire()
    row = answer.begin(AnswerKind.UI, "r2", now=NOW, mono=MONO)
    assert row.serial == 2
    stored(answer, 3)
    assert answer.reader_step(1, 0) == cut("expired"), "its own answer expired; the new one is not its"


# --- a restart: stored, live, and nobody making it ----------------------------------------


def test_a_stored_response_is_compacted_after_its_events_ttl_and_expires_after_its_own():
    timing = Timing(grace_s=60, ttl_s=10, ping_s=1, response_ttl_s=100)
    answer = Answer(None, last_id=0, timing=timing)
    answer.begin(AnswerKind.RESPONSES, "r1", now=NOW, mono=MONO, head="{}")
    stored(answer, 7, terminal=True)
    answer.ended(now=NOW)
    assert answer.alarm_at == NOW + 10
    assert answer.alarm(now=NOW + 5) is Alarm.REARM and answer.alarm_at == NOW + 10
    assert answer.read(3, active_only=False) is Read.SERVE
    assert answer.reader_step(1, 3) == SEND
    assert answer.alarm(now=NOW + 10) is Alarm.COMPACT and answer.alarm_at == NOW + 100
    assert answer.read(3, active_only=False) is Read.EVENTS_GONE and answer.read(7, active_only=False) is Read.NO_CONTENT
    assert answer.read(6, active_only=False) is Read.SERVE, "the terminal is still kept"
    assert answer.reader_step(1, 3) == cut("expired"), "a reader that was reading is told, never skipped ahead silently"
    assert answer.reader_step(1, 6) == SEND
    assert answer.alarm(now=NOW + 50) is Alarm.REARM and answer.alarm_at == NOW + 100, "compacted once"
    assert answer.alarm(now=NOW + 100) is Alarm.EXPIRE
    answer.expire()
    assert not answer.compacted


def test_a_reader_of_a_deleted_answer_is_cut_with_deleted():
    answer = ended()
    answer.expire(code="deleted")
    assert answer.reader_step(1, 2) == cut("deleted")


def test_other_answers_and_a_shorter_response_ttl_expire_with_their_events():
    timing = Timing(grace_s=60, ttl_s=10, ping_s=1, response_ttl_s=5)
    for kind in (AnswerKind.CHAT, AnswerKind.RESPONSES):
        answer = Answer(None, last_id=0, timing=timing if kind is AnswerKind.RESPONSES else replace(timing, response_ttl_s=100))
        answer.begin(kind, "r1", now=NOW, mono=MONO, head="{}")
        stored(answer, 3, terminal=True)
        answer.ended(now=NOW)
        assert answer.alarm(now=NOW + 10) is Alarm.EXPIRE, kind


def test_a_live_row_loaded_by_a_new_instance_is_orphaned_and_interrupted():
    row = AnswerRow(kind=AnswerKind.CHAT, request_id="r1", serial=3, live=True)
    answer = Answer(row, last_id=12, timing=TIMING)
    assert answer.orphaned
    assert answer.alarm(now=NOW) is Alarm.INTERRUPT
    assert answer.stop() is Stop.INTERRUPT
    assert answer.read(0, active_only=True) is Read.NO_CONTENT
    stored(answer, 13)  # its terminal `interrupted`
    answer.ended(now=NOW)
    assert not answer.orphaned and answer.reader_step(3, 13) == END


def test_a_live_answer_is_unterminated_until_its_last_stored_event_is_the_terminal_one():
    answer = fresh()
    assert not answer.unterminated, "nothing to end"
    answer.begin(AnswerKind.CHAT, "r1", now=NOW, mono=MONO)
    assert answer.unterminated, "a producer that stored nothing ended without a terminal"
    stored(answer, 5, terminal=True)
    assert not answer.unterminated
    stored(answer, 6)  # anything after it (never expected) leaves it unterminated again
    assert answer.unterminated
    stored(answer, 7, terminal=True)
    answer.ended(now=NOW + 1)
    assert not answer.unterminated, "an ended answer is not live"
    answer.begin(AnswerKind.CHAT, "r2", now=NOW + 2, mono=MONO + 2)
    assert answer.unterminated, "a new answer starts without one"


def test_ending_with_nothing_stored_is_a_bug_not_a_state():
    with pytest.raises(RuntimeError):
        fresh().ended(now=NOW)


# --- the formats --------------------------------------------------------------------------


def test_each_reader_format_names_its_kind_headers_and_writer():
    assert ReaderFormat.UI.kind is AnswerKind.UI and ReaderFormat.NDJSON.kind is ReaderFormat.SSE.kind is AnswerKind.CHAT
    assert ReaderFormat.SSE.headers["content-type"].startswith("text/event-stream")
    assert ReaderFormat.NDJSON.headers["content-type"].startswith("application/x-ndjson")
    assert "x-vercel-ai-ui-message-stream" in ReaderFormat.UI.headers
    assert ReaderFormat.negotiated("application/x-ndjson") is ReaderFormat.NDJSON and ReaderFormat.negotiated(None) is ReaderFormat.SSE
    assert {f.writer().format for f in ReaderFormat} == {"sse", "ndjson", "ui"}


# --- the protocol ---------------------------------------------------------------------------


CALL = ModelCall(inputs={"messages": [{"role": "user", "content": "hi"}]}, models=("@cf/zai-org/glm-4.7-flash",),
                 reasoning_effort=None, options={})


def test_a_start_order_survives_its_trip_as_json():
    order = StartOrder(request_id="r1", format=ReaderFormat.UI, call=CALL, stream_id=None, message_id="m1")
    again = StartOrder.from_json(order.to_json())
    assert again == order and again.kind is AnswerKind.UI


@pytest.mark.parametrize("text", ["", "[]", "{}", '{"request_id": 1, "format": "sse", "call": {"inputs": {}}}',
                                  '{"request_id": "r", "format": "xml", "call": {"inputs": {}}}',
                                  '{"request_id": "r", "format": "sse", "call": []}',
                                  '{"request_id": "r", "format": "sse", "call": {"inputs": {}}, "stream_id": 5}'])
def test_a_malformed_start_order_is_refused_whole(text):
    with pytest.raises(MalformedOrder):
        StartOrder.from_json(text)


def test_a_read_order_is_checked_value_by_value():
    assert ReadOrder.of(5, "ndjson", False) == ReadOrder(after=5, format=ReaderFormat.NDJSON)
    assert ReadOrder.of(5.0, "ui", True) == ReadOrder(after=5, format=ReaderFormat.UI, active_only=True)
    for after, format, active in [(-1, "sse", False), (10**15, "sse", False), ("5", "sse", False), (1.5, "sse", False),
                                  (True, "sse", False), (0, "xml", False), (0, None, False), (0, "sse", 1)]:
        with pytest.raises(MalformedOrder):
            ReadOrder.of(after, format, active)


def test_a_failure_comes_back_as_its_api_error_and_only_a_documented_code_gets_through():
    error = Failure.read(Failure.of(ApiError("rate_limited", headers={"retry-after": "60"})).to_json())
    assert (error.code, error.status, error.headers) == ("rate_limited", 429, {"retry-after": "60"})
    for text in ["", "Traceback (most recent call last): ...", json.dumps({"code": "made_up"}),
                 json.dumps({"code": "stopped", "headers": {"x": 1}}), json.dumps([1])]:
        assert Failure.read(text).code == "internal_error"

"""The stream lifecycle's rules on CPython with a fake clock: pings, the idle timer that
only model output resets, a client that stops reading, and how every stream ends."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chat.stream.lifecycle import StreamLifecycle, Timeouts
from sse import NDJSONEncoder, OpenAIChunkEncoder, OpenAICompletionEncoder, Reframer, SSEEncoder, UIMessageStreamEncoder
from tests.sse.support import CountingReframer, FeedOnlyReframer, native_event, openai_event, protocol_events

TIMEOUTS = Timeouts(ping_interval=1.0, idle=5.0, client=20.0)


def frame(text: str) -> str:
    return f"data: {json.dumps({'response': text})}\n\n"


DONE = "data: [DONE]\n\n"
PING = ": ping\n\n"


def lifecycle(now: float = 100.0) -> StreamLifecycle:
    reframer = Reframer(request_id="r", model="m", max_padding=0, rng=random.Random(1))
    stream = StreamLifecycle(reframer, TIMEOUTS, now=now)
    stream.start(now)
    return stream


def kinds(out: str) -> list[str]:
    return [kind for kind, _ in protocol_events(out)]


def error_code(out: str) -> str:
    [(kind, data)] = protocol_events(out)
    assert kind == "error"
    return str(data["code"])


def test_done_goes_out_with_the_chunk_that_carries_the_models_end():
    stream = lifecycle()
    out = stream.text(frame("Hi") + DONE + "data: after the end\n\n", 101.0)
    assert kinds(out) == ["delta", "done"] and stream.over
    assert stream.upstream_ended(109.0, failed=True) == "", "an error after [DONE] changes nothing"
    event, fields = stream.outcome(102.0)
    assert event == "chat_stream_completed" and "code" not in fields
    assert (fields["chunks"], fields["chars"], fields["ttft_ms"], fields["duration_ms"]) == (1, 2, 1000, 2000)


def test_a_silent_model_gets_pings_then_an_upstream_timeout():
    stream = lifecycle(0.0)
    assert stream.tick(0.5, client_behind=False) == ""
    assert stream.tick(1.0, client_behind=False) == PING
    assert stream.tick(1.5, client_behind=False) == "", "the ping itself counts as sent"
    assert error_code(stream.tick(5.0, client_behind=False)) == "upstream_timeout"
    assert stream.over and stream.tick(9.0, client_behind=False) == ""
    assert stream.outcome(5.0)[1]["code"] == "upstream_timeout"


def test_keep_alives_from_the_model_do_not_reset_the_idle_timer_but_text_does():
    stream = lifecycle(0.0)
    for second in range(1, 5):
        stream.text(": keep-alive\n\n\n", float(second))
    assert error_code(stream.tick(5.0, client_behind=False)) == "upstream_timeout"
    talking = lifecycle(0.0)
    talking.text(frame("still here"), 4.0)
    assert talking.tick(8.9, client_behind=False) == PING
    assert error_code(talking.tick(9.0, client_behind=False)) == "upstream_timeout"


def test_time_the_client_is_behind_is_never_the_models_and_gets_no_pings():
    stream = lifecycle(0.0)
    stream.text(frame("a"), 0.0)
    for second in range(1, 15):
        assert stream.tick(float(second), client_behind=True) == ""
    # The client reads again: the model gets a whole idle period from the last look.
    assert stream.tick(15.0, client_behind=False) == PING
    assert stream.tick(18.9, client_behind=False) == PING
    assert error_code(stream.tick(19.0, client_behind=False)) == "upstream_timeout"


def test_a_client_that_stays_behind_for_the_client_timeout_is_dropped():
    stream = lifecycle(0.0)
    assert stream.tick(3.0, client_behind=True) == ""
    assert stream.tick(22.9, client_behind=True) == ""
    assert error_code(stream.tick(23.0, client_behind=True)) == "client_timeout"
    assert stream.over and stream.outcome(23.0)[1]["code"] == "client_timeout"


def test_a_chunk_getting_through_means_the_client_made_room():
    stream = lifecycle(0.0)
    stream.tick(1.0, client_behind=True)
    stream.text(frame("a"), 15.0)
    assert stream.tick(16.0, client_behind=True) == ""
    assert stream.tick(35.9, client_behind=True) == "", "the client timeout starts again"
    assert error_code(stream.tick(36.0, client_behind=True)) == "client_timeout"


@pytest.mark.parametrize(
    ("chunks", "failed", "ending"),
    [
        pytest.param([frame("a")], False, "upstream_incomplete", id="closed-without-done"),
        pytest.param([frame("a")], True, "generation_failed", id="failed"),
        pytest.param([], True, "generation_failed", id="failed-before-any-text"),
    ],
)
def test_an_upstream_that_ends_early_ends_the_stream_with_its_error(chunks, failed, ending):
    stream = lifecycle(0.0)
    for chunk in chunks:
        stream.text(chunk, 1.0)
    assert error_code(stream.upstream_ended(2.0, failed=failed)) == ending
    assert stream.over and stream.outcome(2.0) == ("chat_stream_failed", stream.outcome(2.0)[1])


def test_a_client_that_leaves_is_logged_as_cancelled_and_gets_nothing_more():
    stream = lifecycle(0.0)
    stream.text(frame("a"), 1.0)
    stream.client_left()
    assert stream.over
    assert stream.tick(9.0, client_behind=False) == ""
    assert stream.upstream_ended(9.0, failed=True) == ""
    event, fields = stream.outcome(9.0)
    assert event == "chat_stream_cancelled" and fields["chunks"] == 1 and "code" not in fields


def test_a_broken_edge_ends_with_internal_error_and_logs_only_the_type():
    stream = lifecycle(0.0)
    assert error_code(stream.broken(1.0, "TypeError")) == "internal_error"
    event, fields = stream.outcome(1.0)
    assert (event, fields["code"], fields["detail"]) == ("chat_stream_failed", "internal_error", "TypeError")


def test_the_next_tick_is_due_at_the_nearest_deadline():
    stream = lifecycle(0.0)
    assert stream.next_tick(0.0) == pytest.approx(1.0)  # the ping
    stream.text(frame("a"), 0.5)
    assert stream.next_tick(0.5) == pytest.approx(1.0)
    stream.tick(1.5, client_behind=True)
    # Behind: look again after the shorter interval, well before the client timeout.
    assert stream.next_tick(1.5) == pytest.approx(1.0)
    assert stream.next_tick(21.0) == pytest.approx(0.5)


def test_a_collected_answer_without_pings_sleeps_until_its_idle_deadline_and_its_size_is_counted():
    # The non-streamed OpenAI answer sends nothing until it is whole: with no ping interval
    # its reader waits for the idle deadline, not for a ping that never moves the clock.
    from sse import OpenAICompletionEncoder

    reframer = Reframer(request_id="r", model="m", encoder=OpenAICompletionEncoder(created=1), max_padding=0)
    stream = StreamLifecycle(reframer, Timeouts(ping_interval=float("inf"), idle=5.0, client=20.0), now=100.0)
    assert stream.start(100.0) == ""
    assert stream.text(frame("Hello") + frame(" you"), 101.0) == ""
    assert stream.collected_chars == len("Hello you")
    assert stream.next_tick(103.0) == pytest.approx(3.0), "the idle deadline, counted from the last text"
    assert stream.tick(103.0, client_behind=False) == ""
    assert json.loads(stream.tick(106.5, client_behind=False))["error"]["code"] == "upstream_timeout"


def test_an_answer_too_long_to_collect_ends_as_malformed():
    stream = lifecycle()
    stream.text(frame("abc"), 100.5)
    assert error_code(stream.overflowed(101.0)) == "upstream_malformed"
    assert stream.outcome(101.0)[1]["code"] == "upstream_malformed"


def test_a_stop_on_the_servers_side_ends_with_its_code_once_and_is_logged_as_failed():
    stream = lifecycle()
    stream.text(frame("Hi"), 101.0)
    assert error_code(stream.stop(102.0, "stopped")) == "stopped"
    assert stream.over
    assert stream.stop(103.0, "abandoned") == ""
    assert stream.upstream_ended(104.0, failed=False) == ""
    event, fields = stream.outcome(104.0)
    assert (event, fields["code"], fields["chunks"]) == ("chat_stream_failed", "stopped", 1)


# --- the fast path (Reframer.feed_whole_event) keeps the same time as the general one ----


def counting_lifecycle(now: float = 0.0) -> tuple[StreamLifecycle, CountingReframer]:
    """A started stream whose first text was read (the stream's start always goes the
    general way), with a Reframer that counts the texts its fast path took."""
    reframer = CountingReframer(request_id="r", model="m", max_padding=0, rng=random.Random(1))
    stream = StreamLifecycle(reframer, TIMEOUTS, now=now)
    stream.start(now)
    stream.text(": first\n\n", now)
    return stream, reframer


def test_model_text_on_the_fast_path_resets_the_idle_timer_and_counts_as_sent():
    stream, reframer = counting_lifecycle(0.0)
    assert kinds(stream.text(native_event("a"), 4.0)) == ["delta"]
    assert reframer.fast_events == 1
    assert stream.tick(4.9, client_behind=False) == "", "a delta went out at 4.0: no ping yet"
    assert stream.next_tick(4.9) == pytest.approx(0.1)
    assert stream.tick(5.0, client_behind=False) == PING
    assert stream.tick(8.9, client_behind=False) == PING
    assert error_code(stream.tick(9.0, client_behind=False)) == "upstream_timeout", "idle since 4.0"


def test_time_to_first_token_is_the_first_answer_text_on_the_fast_path_too_not_reasoning():
    stream, reframer = counting_lifecycle(100.0)
    stream.text(openai_event("think", "reasoning_content"), 100.5)
    stream.text(openai_event("more", "reasoning"), 101.0)
    stream.text(openai_event("Hi"), 102.0)
    assert reframer.fast_events == 3
    assert kinds(stream.text(DONE, 103.0)) == ["done"]
    event, fields = stream.outcome(103.0)
    assert event == "chat_stream_completed"
    assert (fields["ttft_ms"], fields["chunks"], fields["chars"]) == (2000, 1, 2)


def test_done_after_fast_path_text_ends_the_stream_at_once():
    stream, reframer = counting_lifecycle(0.0)
    stream.text(openai_event("Hi"), 1.0)
    assert reframer.fast_events == 1 and not stream.over
    assert kinds(stream.text(DONE, 2.0)) == ["done"] and stream.over
    assert stream.text(openai_event("late"), 3.0) == "" and reframer.fast_events == 1
    assert stream.tick(9.0, client_behind=False) == "" and stream.upstream_ended(9.0, failed=True) == ""


def test_a_chunk_on_the_fast_path_means_the_client_made_room():
    stream, reframer = counting_lifecycle(0.0)
    stream.tick(1.0, client_behind=True)
    stream.text(native_event("a"), 15.0)
    assert reframer.fast_events == 1
    assert stream.tick(16.0, client_behind=True) == ""
    assert stream.tick(35.9, client_behind=True) == "", "the client timeout starts again"
    assert error_code(stream.tick(36.0, client_behind=True)) == "client_timeout"


ENCODERS = {
    "sse": SSEEncoder,
    "ndjson": NDJSONEncoder,
    "openai": lambda: OpenAIChunkEncoder(created=1),
    "openai-collected": lambda: OpenAICompletionEncoder(created=1),
    "ui": UIMessageStreamEncoder,
}
USAGE = ',"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}'
UPSTREAM_TEXTS = [
    native_event("a"),
    native_event("caf\\u00e9 \\\"q\\\"", "xy"),
    openai_event("Hi"),
    openai_event("Hi", usage=USAGE),
    openai_event("hmm", "reasoning_content"),
    openai_event("hm", "reasoning", ',"usage":null'),
    ": keep-alive\n\n",
    'data: {"response":"par',
    'tial"}\n\n',
    DONE,
]
STEPS = st.lists(
    st.tuples(
        st.sampled_from([0.0, 0.2, 0.9, 1.0, 2.5, 5.0, 21.0]),  # seconds since the step before
        st.one_of(
            st.tuples(st.just("text"), st.sampled_from(UPSTREAM_TEXTS)),
            st.tuples(st.just("text"), st.sampled_from(UPSTREAM_TEXTS)),
            st.tuples(st.just("tick"), st.booleans()),
            st.tuples(st.just("client_left"), st.none()),
        ),
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(STEPS, st.sampled_from(sorted(ENCODERS)))
def test_the_fast_path_and_the_general_path_keep_the_same_time(steps: list[tuple[float, tuple[str, Any]]], encoding: str):
    # The collected answer sends nothing until it is whole, and is read without pings.
    timeouts = Timeouts(ping_interval=math.inf, idle=5.0, client=20.0) if encoding == "openai-collected" else TIMEOUTS
    streams = []
    for reframer_type in (CountingReframer, FeedOnlyReframer):
        reframer = reframer_type(request_id="r", model="m", encoder=ENCODERS[encoding](), rng=random.Random(5))
        streams.append(StreamLifecycle(reframer, timeouts, now=0.0))
    fast, general = streams
    now = 0.0
    assert fast.start(now) == general.start(now)
    for elapsed, (kind, argument) in steps:
        now += elapsed
        if kind == "text":
            outputs = [stream.text(argument, now) for stream in streams]
        elif kind == "tick":
            outputs = [stream.tick(now, client_behind=argument) for stream in streams]
        else:
            outputs = [stream.client_left() for stream in streams]
        assert outputs[0] == outputs[1], (kind, argument)
        assert fast.over == general.over
        assert fast.next_tick(now) == general.next_tick(now)
    assert fast.upstream_ended(now + 1, failed=False) == general.upstream_ended(now + 1, failed=False)
    assert fast.outcome(now + 1) == general.outcome(now + 1)

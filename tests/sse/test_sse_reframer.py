"""The Reframer: upstream text in (bytes decoded first by a caller that holds bytes),
protocol text out."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest

from sse import NDJSONEncoder, Reframer, SSEEncoder
from tests.sse.support import (
    feed,
    ndjson_objects,
    protocol_events,
    run_reframer,
    sent,
    text_and_bytes,
    three_ways,
    without_padding,
)

MODEL = "@cf/zai-org/glm-4.7-flash"
USAGE = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


def native(*texts: str, done: bool = True, usage: bool = True) -> str:
    frames = [
        f"data: {json.dumps({'response': t, 'p': 'abcdefgh'[: len(t)]}, ensure_ascii=False)}\n\n"
        for t in texts
    ]
    if usage:
        frames.append(f"data: {json.dumps({'response': '', 'usage': USAGE})}\n\n")
    if done:
        frames.append("data: [DONE]\n\n")
    return "".join(frames)


def openai(*deltas: dict[str, str], finish: str = "stop") -> str:
    def frame(value: object) -> str:
        return f"data: {json.dumps(value)}\n\n"

    frames = [
        frame(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": d, "finish_reason": None}],
            }
        )
        for d in deltas
    ]
    frames.append(
        frame(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
            }
        )
    )
    frames.append(
        frame({"id": "c", "object": "chat.completion.chunk", "choices": [], "usage": USAGE})
    )
    frames.append("data: [DONE]\n\n")
    return "".join(frames)


def make(**kwargs: Any) -> Reframer:
    return Reframer(request_id="req-1", model=MODEL, rng=random.Random(7), **kwargs)


def test_a_native_stream_becomes_meta_deltas_and_done_however_it_is_split() -> None:
    upstream = native("Hel", "lo \u00e9\u6771", " \U0001f642", "!")
    for how, chunks in text_and_bytes(upstream):
        events = without_padding(protocol_events(run_reframer(make, chunks)))
        assert events == [
            ("meta", {"request_id": "req-1", "model": MODEL}),
            ("delta", {"text": "Hel"}),
            ("delta", {"text": "lo \u00e9\u6771"}),
            ("delta", {"text": " \U0001f642"}),
            ("delta", {"text": "!"}),
            (
                "done",
                {"finish_reason": None, "usage": USAGE, "chunks": 4, "chars": 11, "skipped": 0},
            ),
        ], how


def test_an_openai_stream_becomes_reasoning_deltas_and_done_with_finish_reason() -> None:
    upstream = openai(
        {"role": "assistant"},
        {"reasoning_content": "think"},
        {"content": "Hi"},
        {"content": " there"},
    )
    for how, chunks in text_and_bytes(upstream):
        events = without_padding(protocol_events(run_reframer(make, chunks)))
        assert events == [
            ("meta", {"request_id": "req-1", "model": MODEL}),
            ("reasoning", {"text": "think"}),
            ("delta", {"text": "Hi"}),
            ("delta", {"text": " there"}),
            (
                "done",
                {"finish_reason": "stop", "usage": USAGE, "chunks": 2, "chars": 8, "skipped": 0},
            ),
        ], how


def test_several_events_in_one_chunk_come_out_as_one_text() -> None:
    reframer = make()
    reframer.start()
    out = reframer.feed(native("a", "b", "c", done=False, usage=False))
    assert isinstance(out, str)
    assert [kind for kind, _ in protocol_events(out)] == ["delta", "delta", "delta"]


def test_feed_returns_empty_text_when_a_chunk_completes_no_event() -> None:
    reframer = make()
    reframer.start()
    assert reframer.feed('data: {"response":"a"}\n') == ""
    assert reframer.feed("\n") != ""


def test_an_escaped_response_keeps_its_meaning_and_character_count() -> None:
    upstream = 'data: {"response":"a\\n\\"\\u00e9\\/"}\n\ndata: [DONE]\n\n'
    for how, chunks in three_ways(upstream):
        events = protocol_events(run_reframer(make, chunks))
        assert events[1][1]["text"] == 'a\n"\u00e9/', how
        assert events[-1][1]["chars"] == 5, how


def test_a_lone_surrogate_escape_upstream_stays_valid_utf8_and_json() -> None:
    for upstream in (
        'data: {"response":"x\\ud800"}\n\ndata: [DONE]\n\n',  # the bulk path
        'data: {"response":"x\\ud800","usage":null}\n\ndata: [DONE]\n\n',  # the general path
    ):
        output = run_reframer(make, [upstream])
        sent(output)  # raises if it holds a lone surrogate
        assert protocol_events(output)[1][1]["text"] == "x\ud800"


def test_the_stream_without_done_ends_with_upstream_incomplete() -> None:
    reframer = make()
    output = reframer.start() + reframer.feed(native("a", done=False)) + reframer.finish()
    assert protocol_events(output)[-1] == (
        "error",
        {
            "code": "upstream_incomplete",
            "message": "The model stream ended before it was complete.",
            "request_id": "req-1",
        },
    )
    assert reframer.terminated and not reframer.saw_done
    assert reframer.last_error_code == "upstream_incomplete"


def test_done_without_its_blank_line_at_eof_is_not_seen() -> None:
    reframer = make()
    reframer.feed('data: {"response":"a"}\n\ndata: [DONE]\n')
    assert not reframer.saw_done
    assert protocol_events(reframer.finish())[-1][1]["code"] == "upstream_incomplete"


def test_input_after_done_is_ignored() -> None:
    reframer = make()
    reframer.start()
    out = reframer.feed('data: [DONE]\n\ndata: {"response":"late"}\n\n')
    assert out == ""
    assert reframer.feed('data: {"response":"later"}\n\n' + "x" * 100) == ""
    assert feed(reframer, b'data: {"response":"later"}\n\n\xff') == ""
    events = protocol_events(reframer.finish())
    assert events == [
        ("done", {"finish_reason": None, "usage": None, "chunks": 0, "chars": 0, "skipped": 0})
    ]


def test_decode_never_raises_not_even_after_done_and_input_over_a_cap() -> None:
    # The input after [DONE] is ignored, and so is what it does to the buffer (closed at
    # the cap), for a caller holding bytes too.
    reframer = make(max_line_bytes=24)
    reframer.start()
    assert reframer.feed("data: [DONE]\n\ndata: " + "x" * 100 + "\n\n") == ""
    assert reframer.saw_done and not reframer.terminated
    assert feed(reframer, b"more \xe6") == ""
    assert [kind for kind, _ in protocol_events(reframer.finish())] == ["done"]


def test_events_in_a_chunk_before_done_are_kept_and_those_after_dropped() -> None:
    reframer = make()
    reframer.start()
    out = reframer.feed(
        'data: {"response":"a","usage":null}\n\ndata: [DONE]\n\ndata: {"response":"b"}\n\n'
    )
    assert without_padding(protocol_events(out)) == [("delta", {"text": "a"})]
    assert reframer.saw_done


def test_a_line_over_the_cap_ends_the_stream_with_upstream_malformed_after_earlier_deltas() -> None:
    upstream = 'data: {"response":"ok"}\n\ndata: ' + "x" * 200 + "\n\ndata: [DONE]\n\n"
    for how, chunks in three_ways(upstream):
        reframer = make(max_line_bytes=64)
        output = reframer.start() + "".join(map(reframer.feed, chunks)) + reframer.finish()
        assert [kind for kind, _ in protocol_events(output)] == ["meta", "delta", "error"], how
        assert protocol_events(output)[-1][1]["code"] == "upstream_malformed"
        assert reframer.terminated and reframer.last_error_code == "upstream_malformed"


def test_an_unterminated_line_over_the_cap_is_caught_without_waiting_for_its_end() -> None:
    reframer = make(max_line_bytes=10_000)
    reframer.start()
    outputs = [reframer.feed("y" * 1000) for _ in range(12)]
    assert "upstream_malformed" in "".join(outputs)
    assert reframer.terminated


def test_an_event_of_endless_data_lines_ends_the_stream_with_upstream_malformed() -> None:
    # Each line is short, so only the event cap stops it: no blank line ever comes.
    upstream = 'data: {"response":"ok"}\n\n' + "data: more\n" * 300
    for how, chunks in three_ways(upstream):
        reframer = make(max_event_chars=1000)
        output = reframer.start() + "".join(map(reframer.feed, chunks)) + reframer.finish()
        assert [kind for kind, _ in protocol_events(output)] == ["meta", "delta", "error"], how
        assert protocol_events(output)[-1][1]["code"] == "upstream_malformed"


@pytest.mark.parametrize(
    ("before", "skipped"),
    [
        pytest.param("x" * 101, 0, id="pending-line"),
        pytest.param("data: " + "x" * 101 + "\n", 1, id="pending-data"),
        pytest.param("event: " + "e" * 101 + "\n", 1, id="pending-event-type"),
    ],
)
def test_a_native_frame_after_parser_state_is_read_as_part_of_that_state(
    before: str, skipped: int
) -> None:
    # Text the Reframer carries past a quarter of the cap goes to the parser, which may
    # then hold a partial line, data or an event type; the next block continues them,
    # whatever it looks like, so it must go through the parser, not the fast path.
    reframer = make(max_line_bytes=400)
    reframer.start()
    assert reframer.feed(before) == ""
    assert reframer.feed_whole_event('data: {"response":"a"}\n\n') is None, "an event is pending"
    assert reframer.feed('data: {"response":"a"}\n\n') == ""
    assert (reframer.stats.deltas, reframer.stats.skipped) == (0, skipped)


def test_frames_with_empty_text_emit_nothing_on_the_fast_path_either() -> None:
    reframer = make()
    reframer.start()
    out = reframer.feed('data: {"response":"","p":"ab"}\n\ndata: {"response":"a","p":"x"}\n\n')
    assert without_padding(protocol_events(out)) == [("delta", {"text": "a"})]
    assert reframer.stats.deltas == 1


def test_ping_is_a_comment_in_sse_and_an_object_in_ndjson() -> None:
    sse = make()
    sse.start()
    assert sse.ping() == ": ping\n\n"
    ndjson = make(encoder=NDJSONEncoder())
    ndjson.start()
    assert ndjson.ping() == '{"type":"ping"}\n'


def test_the_first_output_of_any_kind_starts_with_meta() -> None:
    for first in ("ping", "feed", "finish", "fail"):
        reframer = make()
        if first == "ping":
            output = reframer.ping()
        elif first == "feed":
            output = reframer.feed('data: {"response":"a"}\n\n')
        elif first == "finish":
            output = reframer.finish()
        else:
            output = reframer.fail("upstream_timeout")
        assert output.startswith("event: meta\n"), first
        assert reframer.start() == "", first


def test_start_twice_sends_meta_once() -> None:
    reframer = make()
    assert reframer.start().startswith("event: meta")
    assert reframer.start() == ""


def test_after_the_terminal_frame_every_method_returns_empty_text() -> None:
    reframer = make()
    reframer.start()
    assert reframer.fail("generation_failed")
    assert reframer.terminated
    assert reframer.feed(native("a")) == ""
    assert reframer.feed_whole_event('data: {"response":"a"}\n\n') is None
    assert reframer.decode(b"data: \xe6") == ""
    assert reframer.ping() == ""
    assert reframer.finish() == ""
    assert reframer.fail("internal_error") == ""
    assert reframer.start() == ""
    assert reframer.last_error_code == "generation_failed"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        pytest.param("generation_failed", "generation_failed", id="generation-failed"),
        pytest.param("upstream_timeout", "upstream_timeout", id="upstream-timeout"),
        pytest.param("internal_error", "internal_error", id="internal-error"),
        pytest.param("KeyError: secret at line 3", "internal_error", id="unknown-code-never-leaks"),
    ],
)
def test_fail_emits_the_code_with_its_generic_message(code: str, expected: str) -> None:
    reframer = make()
    reframer.start()
    [(kind, data)] = protocol_events(reframer.fail(code))
    assert kind == "error"
    assert data["code"] == expected
    assert data["request_id"] == "req-1"
    assert "secret" not in data["message"]
    assert reframer.last_error_code == expected


def test_an_unexpected_failure_inside_feed_becomes_internal_error_not_an_exception() -> None:
    class Broken(SSEEncoder):
        def json_deltas(self, bodies: Any, paddings: Any) -> str:
            raise RuntimeError("boom")

        def delta(self, text: str, padding: str) -> str:
            raise RuntimeError("boom")

    reframer = make(encoder=Broken())
    output = reframer.feed(native("a"))
    assert protocol_events(output)[-1][1]["code"] == "internal_error"
    assert isinstance(reframer.exception, RuntimeError)
    assert "boom" not in output


def test_non_message_events_are_skipped_and_counted() -> None:
    upstream = (
        'event: other\ndata: {"response":"x"}\n\ndata: nonsense\n\n'
        'data: {"response":"a"}\n\ndata: [DONE]\n\n'
    )
    reframer = make()
    output = run_reframer(lambda: reframer, [upstream])
    assert protocol_events(output)[-1][1]["skipped"] == 2
    assert reframer.stats.skipped == 2


def test_stats_report_chunks_chars_reasoning_usage_and_tool_calls() -> None:
    upstream = (
        'data: {"choices":[{"delta":{"reasoning_content":"abc"}}]}\n\n'
        'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n'
        'data: {"response":"","tool_calls":[{"name":"f"}]}\n\n'
        'data: {"choices":[{"delta":{},"finish_reason":"tool_calls"}],"usage":'
        + json.dumps(USAGE)
        + "}\n\n"
    )
    reframer = make()
    run_reframer(lambda: reframer, [upstream], finish=False)
    stats = reframer.stats
    assert (stats.deltas, stats.chars, stats.reasoning_deltas, stats.reasoning_chars) == (
        1,
        2,
        1,
        3,
    )
    assert (stats.skipped, stats.tool_calls, stats.finish_reason, stats.usage) == (
        0,
        1,
        "tool_calls",
        USAGE,
    )


def test_ndjson_reframer_emits_typed_objects_ending_with_done() -> None:
    output = run_reframer(lambda: make(encoder=NDJSONEncoder()), [native("a", "b")])
    objects = ndjson_objects(output)
    assert [o["type"] for o in objects] == ["meta", "delta", "delta", "done"]
    assert [o.get("text") for o in objects[1:3]] == ["a", "b"]


def test_a_reframer_writes_the_encoding_its_encoders_headers_announce() -> None:
    # A route sends the encoder's headers with the output of the Reframer it was given.
    sse, ndjson = SSEEncoder(), NDJSONEncoder()
    assert sse.headers["content-type"] == "text/event-stream; charset=utf-8"
    events = protocol_events(run_reframer(lambda: make(encoder=sse), [native("a")]))
    assert [kind for kind, _ in events] == ["meta", "delta", "done"]
    assert ndjson.headers["content-type"] == "application/x-ndjson"
    objects = ndjson_objects(run_reframer(lambda: make(encoder=ndjson), [native("a")]))
    assert [o["type"] for o in objects] == ["meta", "delta", "done"]


def test_padding_lengths_are_uniform_over_zero_to_max_padding() -> None:
    reframer = make(max_padding=4)
    reframer.start()
    upstream = native(*["t"] * 5000, usage=False, done=False)
    events = protocol_events(reframer.feed(upstream))
    counts = Counter(len(data["p"]) for _, data in events)
    assert sorted(counts) == [0, 1, 2, 3, 4]
    # 1000 expected per length; a fair draw stays far inside this band.
    assert all(850 < n < 1150 for n in counts.values()), counts


def test_padding_is_on_by_default_and_off_with_max_padding_zero() -> None:
    upstream = native(*["t"] * 300, usage=False)
    padded = protocol_events(run_reframer(make, [upstream]))
    assert max(len(data.get("p", "")) for _, data in padded) == 32
    unpadded = protocol_events(run_reframer(lambda: make(max_padding=0), [upstream]))
    assert {data["p"] for kind, data in unpadded if kind == "delta"} == {""}


def test_a_seeded_rng_makes_the_output_reproducible_and_the_default_does_not() -> None:
    upstream = native(*["t"] * 50)
    assert run_reframer(make, [upstream]) == run_reframer(make, [upstream])
    unseeded = lambda: Reframer(request_id="r", model="m")  # noqa: E731
    assert run_reframer(unseeded, [upstream]) != run_reframer(unseeded, [upstream])


@pytest.mark.parametrize("bad", [-1, 256])
def test_max_padding_outside_its_range_is_refused(bad: int) -> None:
    with pytest.raises(ValueError, match="max_padding"):
        make(max_padding=bad)


def test_two_reframers_share_no_state() -> None:
    first, second = make(), make()
    first.feed('data: {"response":"a","p"')
    second.feed('data: {"response":"b"}\n\n')
    out = first.feed(':"x"}\n\n')
    assert without_padding(protocol_events(out)) == [("delta", {"text": "a"})]
    assert first.stats.deltas == second.stats.deltas == 1


def test_a_finished_reframer_holds_no_upstream_text_and_is_freed_without_the_cycle_collector() -> None:
    import gc
    import weakref

    gc.disable()
    try:
        for ending in ("finish", "fail"):
            reframer = make()
            reframer.start()
            reframer.feed('data: {"response":"a"}\n\ndata: ' + "\U0001f680" * 10_000)
            getattr(reframer, ending)(*(("upstream_timeout",) if ending == "fail" else ()))
            assert reframer.feed("\n\n") == ""
            collected = weakref.ref(reframer)
            del reframer
            assert collected() is None, f"a reference cycle keeps a Reframer after {ending}()"
    finally:
        gc.enable()

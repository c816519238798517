"""The event-stream parser against the WHATWG "event stream interpretation".

Every table case runs three ways (whole, byte by byte, random splits) through
`parse_three_ways`, which also checks the three agree.
"""

from __future__ import annotations

import pytest

from sse import (
    Event,
    EventStreamParser,
    EventTooLargeError,
    LineTooLongError,
    SSEError,
    StreamClosedError,
)
from tests.sse.support import parse_three_ways


def ev(data: str, type: str = "message", id: str = "") -> Event:
    return Event(type=type, data=data, id=id)


SPEC_EXAMPLES = [
    pytest.param(
        b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\n"
        b"data:  third event\n\n",
        [ev("first event", id="1"), ev("second event"), ev(" third event")],
        id="spec-four-blocks-comment-id-reset-and-leading-space",
    ),
    pytest.param(
        b"data\n\ndata\ndata\n\ndata:",
        [ev(""), ev("\n")],
        id="spec-empty-data-newline-data-and-unterminated-last-block",
    ),
    pytest.param(
        b"data:test\n\ndata: test\n\n",
        [ev("test"), ev("test")],
        id="spec-space-after-colon-is-optional",
    ),
]

CASES = [
    pytest.param(b"data: a\n\n", [ev("a")], id="lf-line-ends"),
    pytest.param(b"data: a\r\n\r\n", [ev("a")], id="crlf-line-ends"),
    pytest.param(b"data: a\r\rdata: b\r\r", [ev("a"), ev("b")], id="cr-line-ends"),
    pytest.param(b"data: a\r\n\rdata: b\n\r\n", [ev("a"), ev("b")], id="mixed-line-ends"),
    pytest.param(b"data: a\r\r\n", [ev("a")], id="cr-then-crlf-is-two-line-ends"),
    pytest.param(b"data: a\n\n\n\ndata: b\n\n", [ev("a"), ev("b")], id="extra-blank-lines"),
    pytest.param(b"\xef\xbb\xbfdata: a\n\n", [ev("a")], id="leading-bom-stripped"),
    pytest.param(
        b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n",
        [ev("b")],
        id="only-one-bom-stripped-the-second-makes-an-unknown-field",
    ),
    pytest.param(b"data: \xef\xbb\xbfa\n\n", [ev("\ufeffa")], id="bom-inside-a-value-kept"),
    pytest.param(b": comment\ndata: a\n: another\n\n", [ev("a")], id="comments-ignored"),
    pytest.param(b":\n\n", [], id="comment-only-block-dispatches-nothing"),
    pytest.param(b"data:a\n\n", [ev("a")], id="no-space-after-colon"),
    pytest.param(b"data:  a\n\n", [ev(" a")], id="only-one-space-removed"),
    pytest.param(b"data:\ta\n\n", [ev("\ta")], id="tab-after-colon-kept"),
    pytest.param(b"data: a:b: c\n\n", [ev("a:b: c")], id="value-keeps-later-colons"),
    pytest.param(b"data\n\n", [ev("")], id="field-without-colon-has-empty-value"),
    pytest.param(b"data: a\ndata: b\ndata: c\n\n", [ev("a\nb\nc")], id="multi-line-data"),
    pytest.param(b"data: a\ndata\n\n", [ev("a\n")], id="trailing-empty-data-line"),
    pytest.param(b"event: ping\n\n", [], id="dispatch-only-with-data"),
    pytest.param(b"id: 7\n\n", [], id="id-alone-dispatches-nothing"),
    pytest.param(b"event: x\ndata: a\n\n", [ev("a", type="x")], id="event-type"),
    pytest.param(b"event:\ndata: a\n\n", [ev("a")], id="empty-event-type-is-message"),
    pytest.param(
        b"event: x\n\ndata: a\n\n",
        [ev("a")],
        id="event-type-reset-by-blank-line-without-data",
    ),
    pytest.param(
        b"event: x\ndata: a\n\ndata: b\n\n",
        [ev("a", type="x"), ev("b")],
        id="event-type-reset-after-dispatch",
    ),
    pytest.param(
        b"id: 1\ndata: a\n\ndata: b\n\n",
        [ev("a", id="1"), ev("b", id="1")],
        id="last-event-id-persists",
    ),
    pytest.param(
        b"id: 1\n\ndata: a\n\n",
        [ev("a", id="1")],
        id="id-set-in-a-block-without-data-still-counts",
    ),
    pytest.param(
        b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n",
        [ev("a", id="1"), ev("b", id="1")],
        id="id-containing-nul-ignored",
    ),
    pytest.param(b"id: 1\nid\ndata: a\n\n", [ev("a")], id="bare-id-resets-to-empty"),
    pytest.param(b"Data: a\ndata : b\n\n", [], id="field-names-are-case-and-space-exact"),
    pytest.param(b"foo: bar\ndata: a\n\n", [ev("a")], id="unknown-field-ignored"),
    pytest.param(b"data: a", [], id="unterminated-line-at-eof-not-dispatched"),
    pytest.param(b"data: a\n", [], id="unterminated-event-at-eof-not-dispatched"),
    pytest.param(b"data: a\r", [], id="cr-terminated-event-at-eof-not-dispatched"),
    pytest.param(
        "data: h\u00e9llo \u6771\u4eac \U0001f642\n\n".encode(),
        [ev("h\u00e9llo \u6771\u4eac \U0001f642")],
        id="multi-byte-utf8-survives-any-split",
    ),
    pytest.param(b"data: a\xffb\n\n", [ev("a\ufffdb")], id="invalid-byte-becomes-replacement"),
    pytest.param(
        b"data: a\xe6\x9d\n\n", [ev("a\ufffd")], id="truncated-sequence-becomes-one-replacement"
    ),
    pytest.param(b"data: \xf0\x9f\x99\n\n", [ev("\ufffd")], id="truncated-4-byte-sequence"),
    pytest.param(
        "data: a\u2028b\u0085c\x0bd\x0ce\x1cf\n\n".encode(),
        [ev("a\u2028b\u0085c\x0bd\x0ce\x1cf")],
        id="unicode-line-separators-are-not-line-ends",
    ),
    pytest.param(b"data: a\x00b\n\n", [ev("a\x00b")], id="nul-in-data-kept"),
]


@pytest.mark.parametrize(("stream", "expected"), SPEC_EXAMPLES + CASES)
def test_parser_dispatches_the_events_the_spec_describes(
    stream: bytes, expected: list[Event]
) -> None:
    assert parse_three_ways(stream).events == expected


RETRY_CASES = [
    pytest.param(b"retry: 1500\n", 1500, id="digits"),
    pytest.param(b"retry: 0\n", 0, id="zero"),
    pytest.param(b"retry: 10\nretry: 20\n", 20, id="last-wins"),
    pytest.param(b"retry: 10\nretry: x\n", 10, id="invalid-keeps-previous"),
    pytest.param(b"retry: -1\n", None, id="negative-ignored"),
    pytest.param(b"retry: 1.5\n", None, id="decimal-ignored"),
    pytest.param(b"retry: 15 \n", None, id="trailing-space-ignored"),
    pytest.param(b"retry:\n", None, id="empty-ignored"),
    pytest.param("retry: \u0661\u0662\n".encode(), None, id="non-ascii-digits-ignored"),
    pytest.param("retry: \u00b2\n".encode(), None, id="superscript-digit-ignored"),
]


@pytest.mark.parametrize(("stream", "expected"), RETRY_CASES)
def test_retry_accepts_only_ascii_digits(stream: bytes, expected: int | None) -> None:
    assert parse_three_ways(stream).retry == expected


def test_last_event_id_is_reported_after_the_stream() -> None:
    assert parse_three_ways(b"id: 1\ndata: a\n\nid: 2\n").last_event_id == "2"


def test_a_cr_ending_one_chunk_and_an_lf_starting_the_next_are_one_line_end() -> None:
    parser = EventStreamParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\ndata: b\r") == []
    # Had the LF counted as a line end of its own, the blank line would have
    # dispatched "a" already.
    assert parser.feed(b"\n\r\n") == [ev("a\nb")]


def test_a_chunk_that_is_only_the_lf_of_a_split_crlf_yields_nothing() -> None:
    parser = EventStreamParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\n") == []
    assert parser.feed(b"\n") == [ev("a")]


def test_a_bom_split_across_chunks_is_still_stripped() -> None:
    parser = EventStreamParser()
    assert parser.feed(b"\xef") == []
    assert parser.feed(b"\xbb") == []
    assert parser.feed(b"\xbf") == []
    assert parser.feed(b"data: a\n\n") == [ev("a")]


def test_feed_accepts_memoryview_and_bytearray_chunks() -> None:
    parser = EventStreamParser()
    data = "data: \u00e9\n\n".encode()
    assert parser.feed(memoryview(data)[:7]) == []  # type: ignore[arg-type]
    assert parser.feed(bytearray(data[7:])) == [ev("\u00e9")]


CAP_CASES = [
    pytest.param(b"data: 1234\n\n", 10, [ev("1234")], False, id="line-at-the-cap-passes"),
    pytest.param(b"data: 12345\n\n", 10, [], True, id="line-one-over-the-cap-fails"),
    pytest.param(
        b"data: a\n\ndata: 12345\n\ndata: b\n\n",
        10,
        [ev("a")],
        True,
        id="events-before-the-long-line-survive",
    ),
    pytest.param(b"data: 12345", 10, [], True, id="unterminated-long-line-fails-too"),
    pytest.param(
        b"data: a\n\ndata: 12345", 10, [ev("a")], True, id="long-unterminated-line-after-events"
    ),
    pytest.param(
        "data: \u00e9\u00e9\n\n".encode(), 9, [], True, id="cap-counts-utf8-bytes-not-characters"
    ),
    pytest.param(
        "data: \u00e9\u00e9\n\n".encode(), 10, [ev("\u00e9\u00e9")], False, id="utf8-at-the-cap"
    ),
    pytest.param(
        b"data: \xff\xff\n\n", 11, [], True, id="replacement-characters-count-three-bytes"
    ),
    pytest.param(b"data: 1234\r\n\r\n", 10, [ev("1234")], False, id="line-end-not-counted"),
]


@pytest.mark.parametrize(("stream", "cap", "expected", "overflow"), CAP_CASES)
def test_the_line_cap_raises_a_typed_error_wherever_the_input_is_split(
    stream: bytes, cap: int, expected: list[Event], overflow: bool
) -> None:
    parsed = parse_three_ways(stream, max_line_bytes=cap)
    assert (parsed.events, parsed.overflow) == (expected, overflow)


def test_line_too_long_error_carries_the_limit_and_earlier_events() -> None:
    parser = EventStreamParser(max_line_bytes=8)
    with pytest.raises(LineTooLongError) as caught:
        parser.feed(b"data: a\n\ndata: too long\n\n")
    assert caught.value.limit == 8
    assert caught.value.events == (ev("a"),)
    assert isinstance(caught.value, SSEError)


def test_a_long_line_arriving_byte_by_byte_fails_as_soon_as_it_passes_the_cap() -> None:
    parser = EventStreamParser(max_line_bytes=16)
    for byte in b"data: 0123456789":
        parser.feed(bytes([byte]))
    with pytest.raises(LineTooLongError):
        parser.feed(b"x")


def test_a_huge_line_trickling_in_stays_linear() -> None:
    parser = EventStreamParser(max_line_bytes=1 << 20, max_event_chars=1 << 20)
    for _ in range(1 << 14):
        parser.feed(b"x" * 32)  # 512 KiB in 32-byte pieces, under the cap
    events = parser.feed(b"\ndata: a\n\n")
    assert events == [ev("a")]


def test_feed_after_an_overflow_raises_stream_closed() -> None:
    parser = EventStreamParser(max_line_bytes=4)
    with pytest.raises(LineTooLongError):
        parser.feed(b"data: x\n")
    with pytest.raises(StreamClosedError):
        parser.feed(b"\n")


def test_feed_after_close_raises_stream_closed_and_close_twice_is_harmless() -> None:
    parser = EventStreamParser()
    parser.feed(b"data: a\n")
    parser.close()
    parser.close()
    with pytest.raises(StreamClosedError):
        parser.feed(b"\n")


def test_max_line_bytes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        EventStreamParser(max_line_bytes=0)


EVENT_CAP_CASES = [
    pytest.param(b"data: 12\n\n", 8, [ev("12")], False, id="one-line-at-the-cap"),
    pytest.param(b"data: 123\n\n", 8, [], True, id="one-line-over-the-cap"),
    pytest.param(b"data: a\ndata: b\n\n", 15, [ev("a\nb")], False, id="two-lines-at-the-cap"),
    pytest.param(b"data: a\ndata: b\n\n", 14, [], True, id="two-lines-over-the-cap"),
    pytest.param(b"data\n" * 9, 8, [], True, id="empty-data-lines-with-no-blank-line"),
    pytest.param(b"data: a\n\n" + b"data:\n" * 20, 8, [ev("a")], True, id="earlier-event-kept"),
    pytest.param(b": c\n" * 50 + b"data: ok\n\n", 8, [], True, id="comments-count"),
    pytest.param(b"data: a\n\n\n\n: c\n\ndata: b\n\n", 8, [ev("a"), ev("b")], False, id="blank-lines-end-events"),
]


@pytest.mark.parametrize(("stream", "cap", "expected", "overflow"), EVENT_CAP_CASES)
def test_the_event_cap_bounds_an_event_however_its_data_lines_arrive(
    stream: bytes, cap: int, expected: list[Event], overflow: bool
) -> None:
    parsed = parse_three_ways(stream, max_event_chars=cap)
    assert (parsed.events, parsed.overflow) == (expected, overflow)


def test_event_too_large_error_carries_the_limit_and_earlier_events() -> None:
    parser = EventStreamParser(max_event_chars=8)
    with pytest.raises(EventTooLargeError) as caught:
        parser.feed(b"data: a\n\ndata: 12\ndata: 34\n")
    assert caught.value.limit == 8
    assert caught.value.events == (ev("a"),)
    assert isinstance(caught.value, SSEError)
    with pytest.raises(StreamClosedError):
        parser.feed(b"\n")


def test_max_event_chars_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        EventStreamParser(max_event_chars=0)


def test_a_line_trickling_in_a_byte_a_chunk_is_not_kept_as_a_fragment_per_byte() -> None:
    parser = EventStreamParser()
    for _ in range(100_000):
        parser.feed(b"x")
    assert len(parser._buffer._held) < 100_000 // 32
    assert parser.feed(b"\ndata: a\n\n") == [ev("a")]


def test_a_retry_field_of_thousands_of_digits_is_ignored_not_a_crash() -> None:
    parsed = parse_three_ways(b"retry: 1500\n\nretry: " + b"1" * 5000 + b"\n\ndata: ok\n\n")
    assert parsed.retry == 1500 and parsed.events == [ev("ok")]

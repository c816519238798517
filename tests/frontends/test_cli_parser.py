"""The CLI's event-stream reader on its own (no I/O): the same events however the bytes
are split, per the WHATWG event-stream rules."""

from __future__ import annotations

import random

import pytest

from clients.chat_cli import Event, EventStreamParser, MalformedStream

BODY = (
    "event: meta\r\ndata: {\"request_id\":\"r\"}\r\n\r\n"
    ": ping\n\n"
    "event: delta\rdata: {\"text\":\"Grüße 🚀\"}\r\r"
    "data: line one\ndata: line two\n\n"
    "event: delta\ndata: {\"text\":\"a\u2028b\"}\n\n"
    "event: done\ndata:{}\n\n"
    "event: delta\ndata: unfinished"
).encode()

EXPECTED = [
    Event(type="meta", data='{"request_id":"r"}'),
    Event(type=":", data="ping"),
    Event(type="delta", data='{"text":"Grüße 🚀"}'),
    Event(type="message", data="line one\nline two"),
    Event(type="delta", data='{"text":"a\u2028b"}'),
    Event(type="done", data="{}"),
]


def split_whole(body: bytes) -> list[bytes]:
    return [body]


def split_bytes(body: bytes) -> list[bytes]:
    return [body[i:i + 1] for i in range(len(body))]


def split_randomly(body: bytes) -> list[bytes]:
    rng = random.Random(7)
    cuts = sorted(rng.sample(range(1, len(body)), 25))
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=False)]


@pytest.mark.parametrize("split", [split_whole, split_bytes, split_randomly], ids=["whole", "byte-by-byte", "random"])
def test_events_are_the_same_however_the_bytes_are_split(split):
    parser = EventStreamParser()
    events = [event for chunk in split(BODY) for event in parser.feed(chunk)]
    assert events + parser.finish() == EXPECTED, "an unfinished event at the end is dropped"


def test_a_line_over_the_cap_is_a_malformed_stream():
    parser = EventStreamParser(max_line_chars=100)
    parser.feed(b"data: " + b"x" * 90)
    with pytest.raises(MalformedStream):
        parser.feed(b"x" * 20)

"""Resumable answers: numbering a Reframer's output and writing it again for readers."""

from __future__ import annotations

import json
import random

import pytest

from sse import (
    EventNumberer,
    EventStreamParser,
    NDJSONEncoder,
    Reframer,
    ReplayWriter,
    SSEEncoder,
    StoredEvent,
    UIMessageStreamEncoder,
    parse_event_id,
)
from tests.sse.support import sent

UPSTREAM = (
    'data: {"response":"Hel"}\n\n'
    'data: {"response":"lo \\"you\\"\\n"}\n\n'
    'data: {"response":"","usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n'
    "data: [DONE]\n\n"
)


def reframed(encoder: SSEEncoder | NDJSONEncoder | UIMessageStreamEncoder, chunk_size: int) -> bytes:
    """The frames as sent: UTF-8."""
    reframer = Reframer(request_id="r1", model="m", encoder=encoder, rng=random.Random(7), stream_id="s1")
    out = [reframer.start(), reframer.ping()]
    for start in range(0, len(UPSTREAM), chunk_size):
        out.append(reframer.feed(UPSTREAM[start : start + chunk_size]))
        out.append(reframer.ping())
    out.append(reframer.finish())
    return sent("".join(out))


@pytest.mark.parametrize("chunk_size", [1, 7, 1000])
def test_numbered_events_are_the_reframers_events_with_ids_from_one_and_no_pings(chunk_size: int) -> None:
    frames = reframed(SSEEncoder(), chunk_size)
    numberer = EventNumberer()
    stored: list[StoredEvent] = []
    # Fed in the Reframer's own pieces would do; any split must give the same events.
    for start in range(0, len(frames), 5):
        stored += numberer.number(frames[start : start + 5])
    assert [event.id for event in stored] == list(range(1, len(stored) + 1))
    [after] = numberer.number(b"event: error\ndata: {}\n\n")
    assert after.id == len(stored) + 1, "numbering goes on from the last id given"
    assert [event.type for event in stored] == ["meta", "delta", "delta", "done"]
    assert json.loads(stored[0].data)["stream_id"] == "s1"


def test_numbering_continues_from_a_given_id() -> None:
    numberer = EventNumberer(last_id=41)
    assert [event.id for event in numberer.number(b"event: error\ndata: {}\n\n")] == [42]


def test_sse_replay_parses_back_to_the_same_events_with_their_ids() -> None:
    stored = EventNumberer().number(reframed(SSEEncoder(), 1000))
    written = ReplayWriter("sse").write(stored[1:])
    parser = EventStreamParser()
    parsed = parser.feed(written.encode())
    assert [(event.type, event.data, event.id) for event in parsed] == [
        (event.type, event.data, str(event.id)) for event in stored[1:]
    ]


def test_ndjson_replay_is_the_ndjson_encoding_plus_an_id() -> None:
    stored = EventNumberer().number(reframed(SSEEncoder(), 1000))
    lines = ReplayWriter("ndjson").write(stored).splitlines()
    direct = reframed(NDJSONEncoder(), 1000).decode().splitlines()
    direct = [line for line in direct if line != '{"type":"ping"}']
    assert len(lines) == len(direct)
    for index, (line, expected) in enumerate(zip(lines, direct, strict=True), start=1):
        value = json.loads(line)
        assert value.pop("id") == index
        assert value == json.loads(expected)


def test_ndjson_replay_of_an_empty_object_and_of_data_that_is_not_an_object() -> None:
    writer = ReplayWriter("ndjson")
    events = [StoredEvent(id=1, type="x", data="{}"), StoredEvent(id=2, type="y", data="[DONE]")]
    assert [json.loads(line) for line in writer.write(events).splitlines()] == [
        {"type": "x", "id": 1},
        {"type": "y", "id": 2, "data": "[DONE]"},
    ]


def test_ui_replay_keeps_the_sdk_frames_and_their_done_marker() -> None:
    stored = EventNumberer().number(reframed(UIMessageStreamEncoder(), 3))
    assert stored[-1].data == "[DONE]"
    assert {event.type for event in stored} == {"message"}
    written = ReplayWriter("ui").write(stored)
    parsed = EventStreamParser().feed(written.encode())
    assert [(event.data, event.id) for event in parsed] == [(event.data, str(event.id)) for event in stored]
    assert "event:" not in written


@pytest.mark.parametrize("format", ["sse", "ui", "ndjson"])
def test_pings_are_comments_or_ping_lines(format: str) -> None:
    ping = ReplayWriter(format).ping()  # type: ignore[arg-type]
    assert ping in (": ping\n\n", '{"type":"ping"}\n')
    assert EventStreamParser().feed(ping.encode()) == [] or format == "ndjson"


@pytest.mark.parametrize("value, expected", [("0", 0), ("17", 17), (" 5\t", 5), ("999999999999999", 999999999999999)])
def test_last_event_id_values(value: str, expected: int) -> None:
    assert parse_event_id(value) == expected


@pytest.mark.parametrize("value", ["", " ", "-1", "+1", "1.0", "1e3", "abc", "1" * 16, "٣", "0x10", "1 2"])
def test_malformed_last_event_ids_are_refused(value: str) -> None:
    with pytest.raises(ValueError):
        parse_event_id(value)


def test_meta_names_the_stream_only_when_resumable() -> None:
    assert "stream_id" not in SSEEncoder().meta(request_id="r", model="m")
    assert json.loads(NDJSONEncoder().meta(request_id="r", model="m", stream_id="s"))["stream_id"] == "s"
    assert "stream_id" not in UIMessageStreamEncoder().meta(request_id="r", model="m", stream_id="s")


@pytest.mark.parametrize(
    "body", ["x" * 262_000, "\\u0001" * 43_000, "日" * 87_000, "\\u65e5" * 43_000],
    ids=["ascii", "escaped-control", "utf8", "escaped-utf8"],
)
def test_a_delta_of_an_upstream_event_at_its_cap_is_numbered_whole(body: str) -> None:
    # The upstream's caps bound what the Reframer reads; its frame of that is longer (the
    # JSON around it, the padding) and must still be read back whole.
    reframer = Reframer(request_id="r", model="m", stream_id="s", max_padding=255)
    upstream = 'data: {"response":"' + body + '"}\n\ndata: [DONE]\n\n'
    assert len(upstream.split("\n")[0].encode()) < 256 * 1024, "within the upstream line cap"
    frames = reframer.start() + reframer.feed(upstream) + reframer.finish()
    events = EventNumberer().number(sent(frames))
    assert [event.type for event in events] == ["meta", "delta", "done"]
    assert json.loads(events[1].data)["text"] == json.loads(f'"{body}"')

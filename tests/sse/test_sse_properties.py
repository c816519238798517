"""Properties of the SSE core, checked by Hypothesis over generated streams.

Example counts come from the profile (tests/sse/conftest.py): `ci` by default,
HYPOTHESIS_PROFILE=fuzz for a long fuzzing run.
"""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sse import (
    ERROR_MESSAGES,
    EventStreamParser,
    LineTooLongError,
    NDJSONEncoder,
    Reframer,
    ReplayFormat,
    ReplayWriter,
    SSEEncoder,
    SSEError,
    StoredEvent,
    ToolCall,
    ToolCallDelta,
    UpstreamNormalizer,
)
from tests.sse.support import feed, ndjson_objects, parse_chunks, protocol_events, sent

# --- strategies -------------------------------------------------------------------------

LINE_ENDS = st.sampled_from([b"\n", b"\r", b"\r\n"])
TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list('ab "\\/\n\r\t:\u00e9\u6771\U0001f642\u2028\x00\x1f')),
        st.characters(),
    ),
    max_size=12,
)


def _json_frame(value: object, ensure_ascii: bool = False) -> bytes:
    # surrogatepass: a lone surrogate in generated text becomes bytes that are not
    # UTF-8, one more thing an upstream might send; with ensure_ascii it is an escape.
    text = json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


NATIVE = st.builds(
    lambda text, pad, ascii_: (
        b"data: "
        + _json_frame({"response": text} if pad is None else {"response": text, "p": pad}, ascii_)
    ),
    TEXT,
    st.none() | st.text(alphabet="abcXYZ019", max_size=8),
    st.booleans(),
)
OPENAI = st.builds(
    lambda content, reasoning, finish: (
        b"data: "
        + _json_frame(
            {
                "object": "chat.completion.chunk",
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            k: v
                            for k, v in (("content", content), ("reasoning_content", reasoning))
                            if v is not None
                        },
                        "finish_reason": finish,
                    }
                ],
            }
        )
    ),
    st.none() | TEXT,
    st.none() | TEXT,
    st.none() | st.sampled_from(["stop", "length"]),
)
# The commonest chunk of today's OpenAI-style models (Workers AI, 2026): the shape the
# fast paths take, with counts that are sometimes past what they take.
COUNT = st.integers(0, 99) | st.sampled_from([2**53 - 1, 2**53, 10**15, 10**16])
WORKERS_AI = st.builds(
    lambda field, text, ident, counts, ascii_: (
        b"data: "
        + _json_frame(
            {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": 1764000000,
                "model": "m",
                "choices": [{"index": 0, "delta": {field: text}, "logprobs": None, "finish_reason": None}],
                **(
                    {}
                    if counts is None
                    else {"usage": {"prompt_tokens": counts[0], "completion_tokens": counts[1], "total_tokens": counts[2],
                                    "prompt_tokens_details": {"cached_tokens": counts[3]}}}
                ),
            },
            ascii_,
        )
    ),
    st.sampled_from(["content", "content", "reasoning_content", "reasoning"]),
    TEXT,
    st.sampled_from(["chatcmpl-1", 'a"b', ""]),
    st.none() | st.tuples(COUNT, COUNT, COUNT, COUNT),
    st.booleans(),
)
OTHER_LINES = st.sampled_from(
    [
        b"",
        b"data: [DONE]",
        b"data:[DONE]",
        b"data: [DONE]  ",
        b'data: {"response":"","usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}',
        b'data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}',
        b'data: {"response":"x","tool_calls":[{"name":"f"}]}',
        # Tool-call fragments: in the drawn order they make calls, or a malformed stream.
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{\\"a\\":"}}]}}]}',
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}',
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","type":"function","function":{"name":"g","arguments":""}}]}}]}',
        b'data: {"tool_calls":[{"id":null,"type":null,"function":{"name":null,"arguments":""}}]}',
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}',
        b'data: {"response":42}',
        b'data: {"response":1.10}',
        # The shapes of issue 27: numbers and parts as text, in-band failures, aliases.
        b'data: {"choices":[{"index":0,"delta":{"content":0.005},"finish_reason":null}]}',
        b'data: {"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"pt"}]}}]}',
        b'data: {"choices":[{"index":0,"delta":{"content":true}}]}',
        b'data: {"choices":[{"index":0,"delta":{"reasoning_content":"","reasoning":"r"}}]}',
        b'data: {"choices":[{"index":0,"text":"legacy"}]}',
        b'data: {"error":{"message":"boom","type":"InternalServerError","param":null,"code":500}}',
        b'data: {"object":"error","message":"3040: busy","type":"x","param":null,"code":400}',
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}',
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"max_tokens"}]}',
        b"\xef\xbb\xbfdata: {\"response\":\"bom\"}",
        b"data: not json",
        b"data",
        b"data:",
        b": ping",
        b":",
        b"event: other",
        b"event:",
        b"id: 1",
        b"id: a\x00b",
        b"retry: 100",
        b"retry: x",
        b"foo: bar",
        b"\xef\xbb\xbfdata: bom",
        b"data: \xff\xfe broken utf-8 \xe6\x9d",
        b"x" * 80,
    ]
)
LINE = st.one_of(NATIVE, NATIVE, OPENAI, WORKERS_AI, WORKERS_AI, OTHER_LINES)


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    """Event-stream-like bytes: lines of every kind, every line end, blank lines."""
    parts: list[bytes] = []
    if draw(st.booleans()):
        parts.append(b"\xef\xbb\xbf")
    for line in draw(st.lists(LINE, max_size=12)):
        parts.append(line)
        parts.append(draw(LINE_ENDS))
        if draw(st.integers(0, 3)):
            parts.append(draw(LINE_ENDS))  # mostly a blank line: dispatch
    if draw(st.booleans()):
        parts.append(draw(st.binary(max_size=20)))
    return b"".join(parts)


@st.composite
def chunkings(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(set(draw(st.lists(st.integers(0, len(data)), max_size=len(data) + 1))))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


@st.composite
def stream_and_chunks(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    data = draw(streams())
    return data, draw(chunkings(data))


CAPS = st.sampled_from([24, 64, 1 << 20])

# --- the parser -------------------------------------------------------------------------


@given(stream_and_chunks(), CAPS)
def test_parser_output_does_not_depend_on_how_the_input_is_chunked(
    case: tuple[bytes, list[bytes]], cap: int
) -> None:
    data, chunks = case
    assert parse_chunks(chunks, max_line_bytes=cap) == parse_chunks([data], max_line_bytes=cap)


EVENT_CAPS = st.sampled_from([8, 30, 1 << 18])


@given(stream_and_chunks(), CAPS, EVENT_CAPS)
def test_both_caps_give_the_same_verdict_however_the_input_is_chunked(
    case: tuple[bytes, list[bytes]], cap: int, event_cap: int
) -> None:
    data, chunks = case
    whole = parse_chunks([data], max_line_bytes=cap, max_event_chars=event_cap)
    assert parse_chunks(chunks, max_line_bytes=cap, max_event_chars=event_cap) == whole


FIELD_TEXT = st.text().filter(lambda s: "\r" not in s and "\n" not in s)


@given(
    type_=FIELD_TEXT.filter(bool),
    text=st.text(),
    id=st.integers(min_value=1, max_value=2**53 - 1),
    format=st.sampled_from(["sse", "ui"]),
)
def test_replayed_events_parse_back_to_their_type_id_and_data(type_: str, text: str, id: int, format: ReplayFormat) -> None:
    # Stored data is one line of JSON as our encoders write it: U+2028 and friends unescaped.
    data = json.dumps({"text": text}, ensure_ascii=False, separators=(",", ":"))
    written = ReplayWriter(format).write([StoredEvent(id=id, type=type_, data=data)])
    [got] = parse_chunks([written.encode()]).events
    assert got.type == (type_ if format == "sse" else "message")  # the AI SDK's frames are data-only
    assert (got.id, got.data) == (str(id), data)


@given(text=st.text(), padding=st.text(alphabet="abcXYZ0189", max_size=40))
def test_protocol_frames_round_trip_their_text_in_both_encodings(text: str, padding: str) -> None:
    [(kind, data)] = protocol_events(SSEEncoder().delta(text, padding).encode())
    assert (kind, data) == ("delta", {"text": text, "p": padding})
    [obj] = ndjson_objects(NDJSONEncoder().reasoning(text, padding).encode())
    assert obj == {"type": "reasoning", "text": text, "p": padding}


@settings(max_examples=settings().max_examples * 2)
@given(st.one_of(st.binary(max_size=300), streams()), st.data(), CAPS)
def test_fuzz_parser_raises_nothing_but_its_typed_error_on_any_bytes(
    data: bytes, draw: st.DataObject, cap: int
) -> None:
    parser = EventStreamParser(max_line_bytes=cap)
    try:
        for chunk in draw.draw(chunkings(data)):
            for event in parser.feed(chunk):
                assert isinstance(event.data, str)
        parser.close()
    except SSEError:
        pass


# --- the reframer -----------------------------------------------------------------------

OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("feed"), streams()),
        st.tuples(st.just("feed"), st.binary(max_size=40)),
        st.tuples(st.just("ping"), st.none()),
        st.tuples(st.just("finish"), st.none()),
        st.tuples(st.just("fail"), st.sampled_from([*ERROR_MESSAGES, "bogus"])),
    ),
    max_size=8,
)


def decode(output: str, ndjson: bool) -> list[tuple[str, dict[str, Any]]]:
    if ndjson:
        return [(obj.pop("type"), obj) for obj in ndjson_objects(output)]
    return protocol_events(output)


@given(OPERATIONS, st.booleans(), CAPS)
def test_reframer_emits_exactly_one_terminal_frame_and_it_is_last(
    operations: list[tuple[str, Any]], ndjson: bool, cap: int
) -> None:
    reframer = Reframer(
        request_id="r",
        model="m",
        encoder=NDJSONEncoder() if ndjson else SSEEncoder(),
        max_line_bytes=cap,
        rng=random.Random(0),
    )
    pieces = []
    ended_at = None  # the index of the piece that held the terminal frame
    for name, argument in [*operations, ("finish", None)]:  # the Worker always ends so
        if name == "feed":
            pieces.append(feed(reframer, argument))  # bytes: decoded first
        else:
            method = getattr(reframer, name)
            pieces.append(method(argument) if argument is not None else method())
        if ended_at is None and reframer.terminated:
            ended_at = len(pieces) - 1
    assert ended_at is not None
    # Nothing at all, not even a ping, follows the terminal frame.
    assert all(piece == "" for piece in pieces[ended_at + 1 :])
    events = decode("".join(pieces), ndjson)
    kinds = [kind for kind, _ in events if kind != "ping"]
    assert kinds[0] == "meta"
    assert [kind for kind in kinds if kind in ("done", "error")] == [kinds[-1]]
    if kinds[-1] == "error":
        assert events[-1][1]["code"] == reframer.last_error_code
        assert events[-1][1]["message"] == ERROR_MESSAGES[reframer.last_error_code]
    else:
        assert reframer.saw_done and reframer.last_error_code is None


def boms_before_the_end(data: bytes, cap: int) -> int:
    """Stray BOM lines up to the event that ended the stream: the stream parsed a byte at
    a time, and read until the normalizer saw its end."""
    parser = EventStreamParser(max_line_bytes=cap)
    normalizer = UpstreamNormalizer()
    for i in range(len(data)):
        for event in parser.feed(data[i : i + 1]):
            normalizer.read(event.type, event.data)
            if normalizer.done:
                return parser.stray_boms
    return parser.stray_boms


def reference(chunks: list[bytes], cap: int) -> list[tuple[str, dict[str, Any]]]:
    """The protocol events the Reframer must produce, built from the public parser and
    normalizer one event at a time: the slow, obviously-right composition."""
    parser = EventStreamParser(max_line_bytes=cap)
    normalizer = UpstreamNormalizer(call_id_prefix="call_r")
    out: list[tuple[str, dict[str, Any]]] = [("meta", {"request_id": "r", "model": "m"})]
    chunks_, chars = 0, 0

    def take(events: Any) -> None:
        nonlocal chunks_, chars
        for event in events:
            text, reasoning = normalizer.read(event.type, event.data)
            if reasoning:
                out.append(("reasoning", {"text": reasoning, "p": ""}))
            if text:
                out.append(("delta", {"text": text, "p": ""}))
                chunks_, chars = chunks_ + 1, chars + len(text)
            take_tool_events()
            if normalizer.failure is not None:
                return

    def take_tool_events() -> None:
        for tool_event in normalizer.tool_events:
            fields = {"call_id" if name == "id" else name: getattr(tool_event, name) for name in tool_event.__slots__}
            if isinstance(tool_event, ToolCall):
                if fields["input_error"] is None:
                    del fields["input_error"]
                out.append(("tool_call", fields))
            else:
                kind = "tool_call_delta" if isinstance(tool_event, ToolCallDelta) else "tool_call_start"
                out.append((kind, {**fields, "p": ""}))
        normalizer.tool_events.clear()

    for chunk in chunks:
        if normalizer.done:
            break
        if normalizer.failure is not None:
            code = normalizer.failure
            out.append(("error", {"code": code, "message": ERROR_MESSAGES[code], "request_id": "r"}))
            return out
        try:
            take(parser.feed(chunk))
        except LineTooLongError as error:
            take(error.events)
            if not normalizer.done:
                code = "upstream_malformed"
                out.append(
                    ("error", {"code": code, "message": ERROR_MESSAGES[code], "request_id": "r"})
                )
                return out
            break
    if normalizer.failure is not None:
        code = normalizer.failure
        out.append(("error", {"code": code, "message": ERROR_MESSAGES[code], "request_id": "r"}))
    elif normalizer.done:
        normalizer.complete_tool_calls()
        take_tool_events()
        finish_reason = normalizer.finish_reason
        if normalizer.tool_calls and finish_reason not in ("length", "content_filter", "error"):
            finish_reason = "tool_calls"
        done: dict[str, Any] = {
            "finish_reason": finish_reason,
            "usage": normalizer.usage,
            "chunks": chunks_,
            "chars": chars,
            "skipped": normalizer.skipped + boms_before_the_end(b"".join(chunks), cap),
        }
        if normalizer.tool_calls:
            done["tool_calls"] = normalizer.tool_calls
        out.append(("done", done))
    else:
        code = "upstream_incomplete"
        out.append(("error", {"code": code, "message": ERROR_MESSAGES[code], "request_id": "r"}))
    return out


@given(stream_and_chunks(), CAPS)
def test_reframer_matches_the_event_by_event_composition_however_chunked(
    case: tuple[bytes, list[bytes]], cap: int
) -> None:
    data, chunks = case
    reframer = Reframer(request_id="r", model="m", max_padding=0, max_line_bytes=cap)
    output = reframer.start() + "".join(feed(reframer, chunk) for chunk in chunks) + reframer.finish()
    sent(output)  # always encodes to UTF-8: no lone surrogate
    assert protocol_events(output) == reference(chunks, cap)
    assert protocol_events(output) == reference([data], cap)

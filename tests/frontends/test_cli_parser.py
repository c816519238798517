"""The CLI's readers on their own (no I/O): the same events however the bytes are split,
per the WHATWG event-stream rules; what the protocol's events print; the --tools and
--history files."""

from __future__ import annotations

import asyncio
import io
import json
import random
import re
from collections.abc import AsyncIterator

import pytest

from clients.chat_cli import (
    AnswerWriter,
    Deadline,
    Event,
    EventStreamParser,
    MalformedStream,
    Outcome,
    ProtocolReader,
    read_answer,
    read_history,
    read_tools,
)

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


# --- the protocol's events, read into what the CLI prints (no I/O) ------------------------


def protocol_event(type_: str, **data: object) -> Event:
    return Event(type=type_, data=json.dumps(data))


CALL = {"id": "call_1", "name": "current_time", "arguments": '{"timezone":"UTC"}'}  # as printed
EVENT_CALL = {"call_id": "call_1", "name": "current_time", "arguments": '{"timezone":"UTC"}'}  # as the Worker sends it


@pytest.mark.parametrize(("event", "expected"), [
    pytest.param(protocol_event("tool_call", index=0, **EVENT_CALL, input={"timezone": "UTC"}),
                 {**CALL, "input": {"timezone": "UTC"}}, id="whole-call"),
    pytest.param(protocol_event("tool_call", index=1, **{**EVENT_CALL, "arguments": '{"timezone":'}, input=None, input_error="not valid JSON"),
                 {**CALL, "arguments": '{"timezone":', "input": None, "input_error": "not valid JSON"}, id="input-error"),
    pytest.param(protocol_event("tool_call", index=0, **{**EVENT_CALL, "arguments": "[1]"}, input=[1]),
                 {**CALL, "arguments": "[1]", "input": None, "input_error": "not a JSON object"}, id="input-not-an-object"),
    pytest.param(protocol_event("tool_call", index=0, call_id="call_1", name="current_time", input={}), None, id="no-arguments-skipped"),
    pytest.param(protocol_event("tool_call", index=0, **{**EVENT_CALL, "name": 7}, input={}), None, id="name-not-a-string-skipped"),
    pytest.param(protocol_event("tool_call", index=0, **{**CALL}, input={}), None, id="call-id-missing-skipped"),
    pytest.param(protocol_event("tool_call_start", index=0, call_id="call_1", name="current_time", p="xx"), None, id="start-not-printed"),
    pytest.param(protocol_event("tool_call_delta", index=0, arguments='{"time', p="xx"), None, id="fragment-not-printed"),
])
def test_only_a_whole_tool_call_is_printed_and_a_malformed_one_is_skipped(event, expected):
    reader = ProtocolReader()
    reading = reader.take(event)
    assert (reading.text, reading.tool_call, reading.outcome) == ("", expected, None)
    assert reader.tool_calls == (expected is not None)


def test_the_status_line_of_an_answer_with_tool_calls_counts_them():
    reader = ProtocolReader()
    for event in (
        protocol_event("meta", request_id="r", model="m"),
        protocol_event("delta", text="Let me look.", p=""),
        protocol_event("tool_call_start", index=0, call_id="call_1", name="current_time", p=""),
        protocol_event("tool_call", index=0, **EVENT_CALL, input={"timezone": "UTC"}),
    ):
        assert reader.take(event).outcome is None
    done = reader.take(protocol_event("done", finish_reason="tool_calls", tool_calls=1, chunks=1, chars=12))
    assert done.outcome is not None and done.outcome.status_line == "complete chunks=1 chars=12 tool_calls=1"
    assert Outcome(kind="complete", chunks=2, chars=5).status_line == "complete chunks=2 chars=5", "no count without calls"


# --- the --tools file ---------------------------------------------------------------------


TOOL = {"type": "function", "function": {"name": "current_time", "parameters": {"type": "object"}}}


@pytest.mark.parametrize(("content", "expected"), [
    pytest.param(json.dumps([TOOL]), [TOOL], id="a-list"),
    pytest.param(json.dumps({"tools": [TOOL, {"type": "function", "function": {"name": "b"}}]}),
                 [TOOL, {"type": "function", "function": {"name": "b"}}], id="an-object-with-tools"),
])
def test_a_tools_file_is_read_as_given(tmp_path, content, expected):
    path = tmp_path / "tools.json"
    path.write_text(content)
    assert read_tools(path) == expected


@pytest.mark.parametrize(("content", "problem"), [
    pytest.param("[", "Expecting value", id="not-json"),
    pytest.param("[]", "non-empty list", id="empty"),
    pytest.param(json.dumps({"functions": [TOOL]}), "non-empty list", id="no-tools-key"),
    pytest.param(json.dumps([TOOL["function"]]), 'tool 0 needs "type": "function"', id="bare-function"),
    pytest.param(json.dumps([TOOL, {"type": "function", "function": {"name": ""}}]), 'tool 1 needs a "function" with a non-empty', id="empty-name"),
    pytest.param(json.dumps([{"type": "function", "function": {"name": "a", "parameters": "object"}}]), '"parameters" must be', id="parameters-not-an-object"),
])
def test_a_bad_tools_file_says_what_is_wrong(tmp_path, content, problem):
    path = tmp_path / "tools.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=re.escape(problem)):
        read_tools(path)


def test_a_history_keeps_earlier_tool_calls_and_results_as_they_are(tmp_path):
    call = {"id": "call_1", "type": "function", "function": {"name": "current_time", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "Time?"},
        {"role": "assistant", "content": None, "tool_calls": [call], "extra": 1},
        {"role": "tool", "tool_call_id": "call_1", "content": "12:00"},
    ]
    path = tmp_path / "history.json"
    path.write_text(json.dumps(messages))
    assert read_history(path) == [messages[0], {"role": "assistant", "content": None, "tool_calls": [call]}, messages[2]]
    path.write_text(json.dumps([{"role": "assistant", "content": None}]))
    with pytest.raises(ValueError, match="null only with"):
        read_history(path)


def test_a_tool_call_after_text_that_did_not_end_a_line_is_printed_on_a_line_of_its_own():
    body = "".join(f"event: {type_}\ndata: {json.dumps(data)}\n\n" for type_, data in (
        ("delta", {"text": "Let me look."}),
        ("tool_call", {"index": 0, **EVENT_CALL, "input": {"timezone": "UTC"}}),
        ("delta", {"text": "Done.\n"}),
        ("tool_call", {"index": 1, **EVENT_CALL, "call_id": "call_2", "input": {"timezone": "UTC"}}),
        ("done", {"finish_reason": "tool_calls", "tool_calls": 2}),
    )).encode()

    async def chunks() -> AsyncIterator[bytes]:
        yield body

    out = io.StringIO()
    outcome = asyncio.run(read_answer(chunks(), EventStreamParser(), ProtocolReader(), Deadline(None), AnswerWriter(out), None))
    line = json.dumps({"tool_call": {**CALL, "input": {"timezone": "UTC"}}})
    assert out.getvalue() == f"Let me look.\n{line}\nDone.\n{line.replace('call_1', 'call_2')}\n"
    assert outcome.status_line == "complete chunks=2 chars=18 tool_calls=2"

"""Tool calls on /api/chat in the real runtime: the protocol's tool events from the
emulator's own calls in both framings, SSE and NDJSON alike, a call the request did not
ask for, and a resumable tool answer replayed from any event."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.harness.client import ChatResult, chat
from tests.harness.runtime import RuntimeOptions
from tests.harness.scenarios import scripted_options, send
from tests.runtime.test_resumable import resume, stream_path

TOOLS = [{"type": "function", "function": {
    "name": "current_time", "description": "The current time in an IANA time zone.",
    "parameters": {"type": "object", "properties": {"timezone": {"type": "string", "examples": ["UTC"]}}, "required": ["timezone"]},
}}]
ASK = {"messages": [{"role": "user", "content": "What is the current time in UTC?"}], "tools": TOOLS}


def tool_events(result: ChatResult) -> list[tuple[str, dict[str, Any]]]:
    # Without the padding, which differs per frame by design.
    return [(e.name, {k: v for k, v in (e.data or {}).items() if k != "p"}) for e in result.events if e.name.startswith("tool_call")]


def check_one_call(result: ChatResult) -> dict[str, Any]:
    names = [name for name in result.names if name not in ("ping", "reasoning")]  # GLM thinks first
    assert names[0] == "meta" and names[-1] == "done" and names[1] == "tool_call_start", names
    events = tool_events(result)
    start, whole = events[0][1], events[-1][1]
    assert events[-1][0] == "tool_call" and start["index"] == whole["index"] == 0
    assert start["call_id"] == whole["call_id"] and start["name"] == whole["name"] == "current_time"
    pieces = "".join(fields["arguments"] for name, fields in events if name == "tool_call_delta")
    assert pieces == whole["arguments"] and whole["input"] == {"timezone": "UTC"}
    done = result.terminal.data
    assert done is not None and done["finish_reason"] == "tool_calls" and done["tool_calls"] == 1
    return whole


@pytest.mark.parametrize("framing", [None, "native"], ids=["model's-own-openai-chunks", "native-frames"])
async def test_the_emulators_call_arrives_as_start_pieces_and_the_whole_call(start_runtime, http, framing):
    runtime = start_runtime(RuntimeOptions(ai_pace=0, ai_format=framing))
    sse = await chat(http, runtime.url, ASK)
    whole = check_one_call(sse)
    if framing == "native":
        assert whole["call_id"].startswith("call_")  # native frames carry no id: the Worker's own
    else:
        assert whole["call_id"].startswith("chatcmpl-tool-")  # the model's, as it came
    ndjson = await chat(http, runtime.url, ASK, headers={"accept": "application/x-ndjson"})
    ndjson_events = tool_events(ndjson)
    if framing == "native":
        # The Worker's own ids name the request: the same call of another request differs.
        for _, fields in ndjson_events:
            if "call_id" in fields:
                fields["call_id"] = fields["call_id"].replace(ndjson.headers["x-request-id"], sse.headers["x-request-id"])
    assert ndjson_events == tool_events(sse)
    record = runtime.wait_for_record("chat_stream_completed", request_id=sse.headers["x-request-id"])
    assert record["tool_calls"] == 1 and "current_time" not in json.dumps(record)  # counted, never named


async def test_a_call_the_request_did_not_offer_still_reaches_the_client(start_runtime, http):
    call = {"index": 0, "id": "call_x", "type": "function", "function": {"name": "lookup", "arguments": '{"q":"a"}'}}
    frames = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    upstream = scripted_options([send("".join(f"data: {json.dumps(f)}\n\n" for f in frames) + "data: [DONE]\n\n")])
    runtime = start_runtime(upstream)
    result = await chat(http, runtime.url, {"messages": [{"role": "user", "content": "hi"}]})
    assert [name for name, _ in tool_events(result)] == ["tool_call_start", "tool_call_delta", "tool_call"]
    assert result.terminal.name == "done" and result.terminal.data["finish_reason"] == "tool_calls"


async def test_a_resumable_tool_answer_replays_the_same_tool_events_from_any_event(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0, ai_format=None))
    live = await chat(http, runtime.url, {**ASK, "resumable": True})
    check_one_call(live)
    path = stream_path(live)
    whole = await resume(http, runtime, path)
    assert tool_events(whole) == tool_events(live)
    # Picked up in the middle of the call: the rest of it, with the same ids.
    middle = next(e.id for e in live.events if e.name == "tool_call_delta")
    rest = await resume(http, runtime, path, last_id=middle)
    after = [(e.name, e.id) for e in live.events if e.id is not None and int(e.id) > int(middle)]
    assert [(e.name, e.id) for e in rest.events] == after
    assert rest.names[-2:] == ["tool_call", "done"] or rest.names[-1] == "done"

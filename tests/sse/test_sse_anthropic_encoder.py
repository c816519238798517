"""Anthropic's Messages events from the Reframer, checked against the `anthropic` SDK's own
types and its own accumulator: blocks open and close in order, indices count the blocks
sent, the stop reason tells a cut from an end, and a failure is one `error` event."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import Message, RawMessageStreamEvent
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from sse import AnthropicEncoder, Reframer
from tests.sse.support import parse_chunks, run_reframer, sent, three_ways
from tests.sse.test_sse_responses_encoder import call, chunk, texts, upstreams

EVENT = TypeAdapter(RawMessageStreamEvent)


def reframer(*, streamed: bool = True, thinking: bool = True, stop: tuple[str, ...] = (), max_tokens: int | None = None) -> Reframer:
    return Reframer(request_id="r1", model="@cf/m", encoder=AnthropicEncoder(streamed=streamed, thinking=thinking), max_padding=8,
                    rng=random.Random(7), stop=stop, max_tokens=max_tokens)


def events(output: str) -> list[dict[str, Any]]:
    """Each event's data, named by its `event:` line and valid by the SDK's types."""
    out = []
    for event in parse_chunks([sent(output)], max_line_bytes=1 << 24, max_event_chars=1 << 24).events:
        data = json.loads(event.data)
        assert event.type == data["type"]
        if data["type"] not in ("error", "ping"):  # the SDK reads these two apart from its event types
            EVENT.validate_python(data)
        out.append(data)
    return out


def accumulated(found: list[dict[str, Any]]) -> Message | None:
    """What the SDK's MessageStream makes of the events (None before message_start)."""
    snapshot = None
    buffers: dict[int, bytes] = {}  # its partial tool inputs, by block
    for data in found:
        if data["type"] == "error":
            break
        if data["type"] == "ping":
            continue
        snapshot = accumulate_event(event=EVENT.validate_python(data), current_snapshot=snapshot, json_bufs=buffers)  # type: ignore[arg-type]
    return snapshot


# Calls whose arguments are JSON, in one piece: the SDK parses a tool_use block's input.
ANTHROPIC_UPSTREAMS = upstreams(arguments=texts.map(lambda text: [json.dumps({"at": text})]))


@given(ANTHROPIC_UPSTREAMS, st.integers(0, 1000), st.booleans())
def test_the_events_are_valid_ordered_and_the_same_however_the_upstream_is_chunked(upstream, seed: int, thinking: bool) -> None:
    frames, ending = upstream
    outputs = {name: run_reframer(lambda: reframer(thinking=thinking), chunks) for name, chunks in three_ways("".join(frames), seed)}
    assert len(set(outputs.values())) == 1
    found = events(outputs["whole"])
    kinds = [data["type"] for data in found]
    assert kinds[0] == "message_start"
    open_blocks: list[int] = []
    started = 0
    for data in found:
        if data["type"] == "content_block_start":
            assert data["index"] == started and not open_blocks  # one block at a time, counted from 0
            open_blocks.append(data["index"])
            started += 1
        elif data["type"] == "content_block_delta":
            assert open_blocks == [data["index"]]
        elif data["type"] == "content_block_stop":
            assert open_blocks.pop() == data["index"]
    if ending in ("stop", "length"):
        assert kinds[-2:] == ["message_delta", "message_stop"] and not open_blocks
        assert found[-2]["delta"]["stop_reason"] == {"stop": "end_turn", "length": "max_tokens"}[ending] or (
            ending == "stop" and found[-2]["delta"]["stop_reason"] == "tool_use")
        message = accumulated(found)
        assert message is not None and Message.model_validate(message.model_dump())
        shown = [block.type for block in message.content]
        assert thinking or "thinking" not in shown
    else:
        # A failure: one error event, last, and no message_stop; the block it failed in stays open.
        assert kinds[-1] == "error" and "message_stop" not in kinds and kinds.count("error") == 1
        assert found[-1]["error"]["type"] == "api_error" and len(open_blocks) <= 1


@given(ANTHROPIC_UPSTREAMS, st.booleans())
def test_a_collected_message_holds_what_the_stream_says(upstream, thinking: bool) -> None:
    frames, ending = upstream
    streamed = accumulated(events(run_reframer(lambda: reframer(thinking=thinking), ["".join(frames)])))
    whole = json.loads(run_reframer(lambda: reframer(streamed=False, thinking=thinking), ["".join(frames)]))
    if ending in ("cut", "error"):
        assert whole["type"] == "error" and whole["error"]["type"] == "api_error"
        return
    message = Message.model_validate(whole)
    assert streamed is not None
    assert [block.model_dump() for block in message.content] == [block.model_dump() for block in streamed.content]
    assert (message.stop_reason, message.usage.output_tokens) == (streamed.stop_reason, streamed.usage.output_tokens)


def test_a_stop_sequence_is_named_with_its_stop_reason() -> None:
    upstream = chunk({"content": "Once upon a time. THE END"}) + chunk({}, "stop") + "data: [DONE]\n\n"
    found = events(run_reframer(lambda: reframer(stop=("THE END",)), [upstream]))
    assert found[-2]["delta"] == {"stop_reason": "stop_sequence", "stop_sequence": "THE END"}


def test_usage_counts_cached_prompt_tokens_apart_as_anthropic_does() -> None:
    usage = 'data: {"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":7,"total_tokens":57,"prompt_tokens_details":{"cached_tokens":40}}}\n\n'
    upstream = chunk({"content": "hi"}) + chunk({}, "stop") + usage + "data: [DONE]\n\n"
    found = events(run_reframer(lambda: reframer(), [upstream]))
    assert found[-2]["usage"] == {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 40, "output_tokens": 7}


@pytest.mark.parametrize("arguments", ['{"at": ', "[1, 2]", "not json"], ids=["cut-json", "a-list", "not-json"])
def test_a_call_whose_input_is_no_json_object_fails_the_answer_instead_of_reading_as_one(arguments: str) -> None:
    # A tool_use block's input is an object: the SDKs would run such a call as {} or fail
    # parsing it after message_stop (found by a review's attack, 2026-12-04).
    upstream = "".join(call(0, "c0", "now", [arguments])) + chunk({}, "tool_calls") + "data: [DONE]\n\n"
    found = events(run_reframer(lambda: reframer(), [upstream]))
    assert found[-1]["type"] == "error" and "message_stop" not in [data["type"] for data in found]
    assert "upstream_malformed" in found[-1]["error"]["message"]
    whole = json.loads(run_reframer(lambda: reframer(streamed=False), [upstream]))
    assert whole["type"] == "error" and "upstream_malformed" in whole["error"]["message"]


def test_nothing_follows_a_refused_call_not_even_the_text_that_ended_it() -> None:
    upstream = "".join(call(0, "c0", "now", ['{"at": '])) + chunk({"content": "after"}) + chunk({}, "stop") + "data: [DONE]\n\n"
    found = events(run_reframer(lambda: reframer(), [upstream]))
    assert found[-1]["type"] == "error" and not any(data.get("delta", {}).get("type") == "text_delta" for data in found)


def test_a_model_without_capacity_midway_is_overloaded_and_any_other_failure_an_api_error() -> None:
    busy = 'data: {"error":{"message":"3040: Capacity temporarily exceeded","code":3040}}\n\n'
    for upstream, kind in ((chunk({"content": "a"}) + busy, "overloaded_error"),
                           (chunk({"content": "a"}) + 'data: {"error":{"message":"x"}}\n\n', "api_error")):
        found = events(run_reframer(lambda: reframer(), [upstream]))
        assert found[-1]["type"] == "error" and found[-1]["error"]["type"] == kind

"""The Responses encoder on CPython: the same events however the upstream is chunked, every
event valid by the `openai` SDK's own event types, the items opened and closed in order,
exactly one terminal, and the collected object equal to the streamed one's."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from sse import Reframer, ResponsesEncoder
from tests.sse.support import parse_chunks, run_reframer, sent, three_ways

EVENT = TypeAdapter(ResponseStreamEvent)
TERMINALS = ("response.completed", "response.incomplete", "response.failed")
ECHO = {"tools": [], "tool_choice": "auto", "parallel_tool_calls": True, "instructions": None, "metadata": None,
        "temperature": None, "top_p": None, "max_output_tokens": None, "text": {"format": {"type": "text"}},
        "reasoning": {"effort": None, "summary": None}, "store": False, "truncation": "disabled"}


def encoder(*, streamed: bool = True, max_tokens: int | None = None, summary: bool = False) -> ResponsesEncoder:
    return ResponsesEncoder(created_at=1_764_000_000, response=ECHO, streamed=streamed, max_tokens=max_tokens,
                            names={"clock__now": ("clock", "now")}, reasoning_summary=summary)


def reframer(*, streamed: bool = True, padding: int = 0, max_tokens: int | None = None, summary: bool = False) -> Reframer:
    return Reframer(request_id="r1", model="@cf/m", encoder=encoder(streamed=streamed, max_tokens=max_tokens, summary=summary),
                    max_padding=padding, rng=random.Random(7), max_tokens=max_tokens)


def events(output: str) -> list[dict[str, Any]]:
    """Each event's data, checked to be named by its `event:` line and valid by the SDK's types."""
    parsed = parse_chunks([sent(output)], max_line_bytes=1 << 24, max_event_chars=1 << 24).events
    out = []
    for event in parsed:
        data = json.loads(event.data)
        assert event.type == data["type"]
        EVENT.validate_python(data)  # raises on any field the SDK's types do not allow
        out.append(data)
    return out


def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"


def call(index: int, call_id: str, name: str, pieces: list[str]) -> list[str]:
    start = chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]})
    return [start, *(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}) for piece in pieces)]


USAGE = 'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}\n\n'


def check_stream(found: list[dict[str, Any]]) -> None:
    assert [event["sequence_number"] for event in found] == list(range(len(found)))
    kinds = [event["type"] for event in found]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert sum(kind in TERMINALS for kind in kinds) == 1 and kinds[-1] in TERMINALS
    open_items: set[int] = set()
    for event in found:
        if event["type"] == "response.output_item.added":
            assert event["output_index"] not in open_items
            open_items.add(event["output_index"])
        elif event["type"] == "response.output_item.done":
            open_items.remove(event["output_index"])
        elif "output_index" in event:
            assert event["output_index"] in open_items  # every event of an item comes between its added and done
    final = found[-1]["response"]
    Response.model_validate(final)
    # Only a cut or a failure leaves items open: those it cut, listed as incomplete (a cut, only the last).
    assert open_items == {index for index, item in enumerate(final["output"]) if item["status"] == "incomplete"}
    assert not open_items or kinds[-1] == "response.failed" or (kinds[-1] == "response.incomplete" and open_items == {len(final["output"]) - 1})


texts = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)


ANY_ARGUMENTS = st.lists(texts, max_size=3)  # a call's arguments in pieces, JSON or not


@st.composite
def upstreams(draw: st.DrawFn, arguments: st.SearchStrategy[list[str]] = ANY_ARGUMENTS) -> tuple[list[str], str]:
    """An OpenAI-framed upstream of reasoning, text and calls (their arguments in the pieces
    `arguments` draws) in any order, and how it ends."""
    frames: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["text", "reasoning", "call"]))
        if kind == "call":
            index = sum(frame.count('"id"') for frame in frames)
            frames += call(index, f"c{index}", draw(st.sampled_from(["now", "clock__now"])), draw(arguments))
        else:
            frames.append(chunk({"content" if kind == "text" else "reasoning_content": draw(texts)}))
    ending = draw(st.sampled_from(["stop", "length", "cut", "error"]))
    if ending in ("stop", "length"):
        frames += [chunk({}, ending), USAGE, "data: [DONE]\n\n"]
    elif ending == "error":
        frames.append('data: {"error":{"message":"x","code":500}}\n\ndata: [DONE]\n\n')
    return frames, ending


@given(upstreams(), st.integers(0, 1000), st.booleans())
def test_the_events_are_valid_ordered_and_the_same_however_the_upstream_is_chunked(
    upstream: tuple[list[str], str], seed: int, summary: bool,
) -> None:
    frames, ending = upstream
    outputs = {name: run_reframer(lambda: reframer(summary=summary), chunks) for name, chunks in three_ways("".join(frames), seed)}
    assert len(set(outputs.values())) == 1
    found = events(outputs["whole"])
    check_stream(found)
    final = found[-1]
    expected = {"stop": "response.completed", "length": "response.incomplete", "cut": "response.failed", "error": "response.failed"}
    assert final["type"] == expected[ending]
    # The terminal's output repeats exactly what the deltas said, item by item.
    said: dict[int, str] = {}
    for event in found:
        if event["type"] in ("response.output_text.delta", "response.reasoning_text.delta", "response.reasoning_summary_text.delta",
                             "response.function_call_arguments.delta"):
            said[event["output_index"]] = said.get(event["output_index"], "") + event["delta"]
    for index, item in enumerate(final["response"]["output"]):
        if item["type"] == "function_call":
            assert item["arguments"] == said.get(index, "")
        else:
            parts = item["summary"] if summary and item["type"] == "reasoning" else item["content"]
            assert [part["text"] for part in parts] == [said[index]]


@given(upstreams(), st.booleans())
def test_the_collected_object_is_the_streamed_terminals_response(upstream: tuple[list[str], str], summary: bool) -> None:
    frames, ending = upstream
    streamed = events(run_reframer(lambda: reframer(summary=summary), ["".join(frames)]))[-1]["response"]
    collected = json.loads(run_reframer(lambda: reframer(streamed=False, summary=summary), ["".join(frames)]))
    if ending in ("cut", "error"):
        assert collected == {"error": {"message": collected["error"]["message"], "type": "server_error", "param": None,
                                       "code": found_code(streamed)}}
        return
    Response.model_validate(collected)
    assert collected == streamed


def found_code(response: dict[str, Any]) -> str:
    # Our code, as the failed Response's message carries it.
    return response["error"]["message"].rsplit("(", 1)[1].split(",")[0]


def test_a_namespace_tools_call_goes_back_with_namespace_and_name_apart() -> None:
    upstream = "".join([*call(0, "c0", "clock__now", ['{"tz":', '"UTC"}']), chunk({}, "tool_calls"), "data: [DONE]\n\n"])
    found = events(run_reframer(reframer, [upstream]))
    [item] = found[-1]["response"]["output"]
    assert (item["namespace"], item["name"], item["call_id"], item["arguments"]) == ("clock", "now", "c0", '{"tz":"UTC"}')
    added = next(event for event in found if event["type"] == "response.output_item.added")
    assert added["item"]["status"] == "in_progress" and added["item"]["arguments"] == ""


def test_a_failure_sends_openais_error_event_then_response_failed_and_leaves_the_cut_item_open() -> None:
    # An output_item.done would read as a finished message (Codex CLI shows it as the reply).
    upstream = chunk({"reasoning_content": "Hm"}) + chunk({"content": "Half"})
    found = events(run_reframer(reframer, [upstream], finish=True))
    kinds = [event["type"] for event in found]
    assert kinds[-3:] == ["response.output_text.delta", "error", "response.failed"]
    error = found[-2]
    assert error["code"] == error["error"]["code"] == "upstream_incomplete" and error["error"]["type"] == "server_error"
    response = found[-1]["response"]
    assert response["error"] == {"code": "server_error", "message": f"{error['message']} (upstream_incomplete, request r1)"}
    assert [(item["type"], item["status"]) for item in response["output"]] == [("reasoning", "completed"), ("message", "incomplete")]


def test_asked_for_a_summary_the_reasoning_streams_as_its_summary_events() -> None:
    upstream = chunk({"reasoning_content": "Hm, "}) + chunk({"reasoning_content": "yes."}) + chunk({"content": "Yes"}) + \
        chunk({}, "stop") + "data: [DONE]\n\n"
    kinds = [event["type"] for event in events(run_reframer(lambda: reframer(summary=True), [upstream]))]
    assert kinds[2:9] == ["response.output_item.added", "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
                          "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
                          "response.reasoning_summary_part.done", "response.output_item.done"]


def test_padding_rides_in_obfuscation_and_is_left_out_when_off() -> None:
    upstream = chunk({"reasoning_content": "a"}) + chunk({"content": "b"}) + chunk({}, "stop") + "data: [DONE]\n\n"
    padded = events(run_reframer(lambda: reframer(padding=32), [upstream]))
    deltas = [event for event in padded if event["type"].endswith(".delta")]
    assert len(deltas) == 2 and all("obfuscation" in event for event in deltas)
    plain = events(run_reframer(reframer, [upstream]))
    assert not any("obfuscation" in event for event in plain)


@pytest.mark.parametrize(("usage", "expected"), [
    ({"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12, "cached_tokens": 4},
     {"input_tokens": 5, "input_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 0}, "output_tokens": 7,
      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 12}),
])
def test_usage_is_in_the_responses_shape(usage: dict[str, int], expected: dict[str, Any]) -> None:
    from sse import responses_usage

    assert responses_usage(usage) == expected


def test_a_budget_spent_without_a_finish_reason_is_incomplete() -> None:
    # Native frames carry no finish reason: a budget spent may well be a cut.
    upstream = 'data: {"response":"abc"}\n\ndata: {"response":"","usage":{"prompt_tokens":1,"completion_tokens":3,"total_tokens":4}}\n\n'
    found = events(run_reframer(lambda: reframer(max_tokens=3), [upstream + "data: [DONE]\n\n"]))
    assert found[-1]["type"] == "response.incomplete"
    assert found[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_pings_are_comments_and_headers_are_the_stream_headers() -> None:
    streamed, collected = encoder(), encoder(streamed=False)
    assert streamed.ping() == ": ping\n\n" and collected.ping() == ""
    assert streamed.headers["x-accel-buffering"] == "no" and collected.headers == {"content-type": "application/json; charset=utf-8"}


def test_a_call_cut_at_the_budget_is_incomplete_and_never_done() -> None:
    # The attack of issue 31: `{"city":"P` reached the client as a completed call.
    upstream = "".join([chunk({"content": "Looking."}), *call(0, "c0", "now", ['{"city":"P']), chunk({}, "length"), USAGE,
                        "data: [DONE]\n\n"])
    found = events(run_reframer(reframer, [upstream]))
    kinds = [event["type"] for event in found]
    assert "response.function_call_arguments.done" not in kinds and kinds[-1] == "response.incomplete"
    assert [(event["item"]["type"], event["item"]["status"]) for event in found if event["type"] == "response.output_item.done"] == \
        [("message", "completed")]
    assert [item["status"] for item in found[-1]["response"]["output"]] == ["completed", "incomplete"]
    collected = json.loads(run_reframer(lambda: reframer(streamed=False), [upstream]))
    assert [item["status"] for item in collected["output"]] == ["completed", "incomplete"]


def test_an_answer_longer_than_a_response_may_hold_ends_failed() -> None:
    from sse import MAX_HELD_ANSWER_CHARS

    piece = "x" * 60_000
    frames = [chunk({"content": piece})] * (MAX_HELD_ANSWER_CHARS // len(piece) + 2) + ["data: [DONE]\n\n"]
    found = events(run_reframer(reframer, frames))
    assert found[-1]["type"] == "response.failed" and found[-2]["code"] == "upstream_malformed"
    held = sum(len(event["delta"]) for event in found if event["type"] == "response.output_text.delta")
    assert MAX_HELD_ANSWER_CHARS < held <= MAX_HELD_ANSWER_CHARS + len(piece)


def test_more_output_items_than_a_response_may_hold_end_it_failed() -> None:
    from sse import MAX_OUTPUT_ITEMS

    switching = [chunk({"reasoning_content": "a"}), chunk({"content": "b"})] * (MAX_OUTPUT_ITEMS // 2 + 1)
    found = events(run_reframer(reframer, [*switching, "data: [DONE]\n\n"]))
    assert found[-1]["type"] == "response.failed" and found[-2]["code"] == "upstream_malformed"
    assert len(found[-1]["response"]["output"]) == MAX_OUTPUT_ITEMS + 1


def test_frames_that_could_not_be_read_are_counted_on_the_terminal_response() -> None:
    upstream = chunk({"content": "a"}) + "data: {not json\n\n" + chunk({}, "stop") + "data: [DONE]\n\n"
    found = events(run_reframer(reframer, [upstream]))
    assert found[-1]["response"]["skipped_frames"] == 1
    assert "skipped_frames" not in events(run_reframer(reframer, [chunk({"content": "a"}) + "data: [DONE]\n\n"]))[-1]["response"]


def test_a_whole_call_stays_open_while_other_calls_stream_so_an_upstream_that_goes_back_to_it_never_closes_it() -> None:
    # The second attack of issue 31: pieces of call 0 after call 1 began closed call 0 with cut
    # arguments before the stream failed.
    upstream = "".join([*call(0, "c0", "now", ['{"city":']), *call(1, "c1", "now", ["{}"]),
                        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"P"}'}}]}), chunk({}, "tool_calls"),
                        "data: [DONE]\n\n"])
    found = events(run_reframer(reframer, [upstream]))
    closed = [event["item"]["call_id"] for event in found if event["type"] == "response.output_item.done"]
    if found[-1]["type"] == "response.failed":
        assert closed == [] and {item["status"] for item in found[-1]["response"]["output"]} == {"incomplete"}
    else:
        assert found[-1]["type"] == "response.completed" and closed == ["c0", "c1"]


def test_parallel_calls_close_together_at_the_end_in_output_order() -> None:
    upstream = "".join([*call(0, "c0", "now", ["{}"]), *call(1, "c1", "now", ["{}"]), chunk({}, "tool_calls"), "data: [DONE]\n\n"])
    found = events(run_reframer(reframer, [upstream]))
    kinds = [(event["type"], event.get("output_index")) for event in found if "output_item" in event["type"]]
    assert kinds == [("response.output_item.added", 0), ("response.output_item.added", 1), ("response.output_item.done", 0),
                     ("response.output_item.done", 1)]

"""Stored and background responses, their pure parts on CPython: the state machine's
background rules and owner, the order the Worker sends its object, the terminal of a
reader cut off from a stored response (its sequence numbers go on, and the SDK's types
read it), the whole-answer reader, `previous_response_id`'s merge and the request checks.
The real runtime's side is tests/openai_api/test_responses_stored.py."""

from __future__ import annotations

import json

import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from chat.api.responses import continued, stored_response_key, validate_responses
from chat.config import Config
from chat.model.call import ModelCall
from chat.resumable.answer import BACKGROUND_LIMIT_S, Answer, AnswerRow, Tick, Timing
from chat.resumable.formats import AnswerKind, FinalResponse, ReaderFormat
from chat.resumable.protocol import (
    MAX_ORDER_BYTES,
    Failure,
    MalformedOrder,
    ResponseOrder,
    StartOrder,
    images_by_reference,
    images_restored,
)
from chat.web import http
from chat.web.errors import ApiError
from sse import MAX_STORED_ANSWER_CHARS, MAX_STORED_HEAD_BYTES, Part, PartKind, ResponsesEncoder, portable_json
from tests.sse.support import stats

CONFIG = Config(model="@cf/zai-org/glm-4.7-flash")
TIMING = Timing(grace_s=60.0, ttl_s=600.0, ping_s=15.0)
EVENTS = TypeAdapter(ResponseStreamEvent)
RESPONSE_ID = "resp_" + "ab" * 32
ECHO = {"instructions": None, "metadata": None, "parallel_tool_calls": True, "temperature": None, "top_p": None,
        "tool_choice": "auto", "tools": [], "text": {"format": {"type": "text"}}, "reasoning": {"effort": None, "summary": None},
        "store": True, "truncation": "disabled", "max_output_tokens": None}
CALL = ModelCall(models=("@cf/zai-org/glm-4.7-flash",), inputs={"messages": [{"role": "user", "content": "hi"}], "stream": True})

FIRST_TEXT = Part(kind=PartKind.TEXT, number=0)  # the answer's first part, to write text into


def order(**changes: object) -> ResponseOrder:
    fields: dict[str, object] = {"response_id": RESPONSE_ID, "created_at": 1_800_000_000, "echo": ECHO, "names": {"ns__f": ("ns", "f")},
                                 "reasoning_summary": False, "obfuscation": True, "background": True, "reader": False,
                                 "owner": "token:abc", "input": [{"type": "message", "role": "user", "content": "hi"}]}
    return ResponseOrder(**{**fields, **changes})  # type: ignore[arg-type]


def background_answer(mono: float = 100.0) -> Answer:
    answer = Answer(None, last_id=0, timing=TIMING)
    answer.begin(AnswerKind.RESPONSES, "r1", now=1e9, mono=mono, head="{}", background=True, owner="")
    return answer


def parsed(frames: str) -> list[dict[str, object]]:
    return [json.loads(line[6:]) for line in frames.splitlines() if line.startswith("data: ")]


# --- the state machine -----------------------------------------------------------------------


def test_a_background_answer_is_never_abandoned_unread_but_stops_at_its_time_limit():
    answer = background_answer()
    assert answer.readers == 0
    assert answer.tick(mono=100.0 + 10 * TIMING.grace_s) is not Tick.ABANDON
    assert answer.tick(mono=100.0 + BACKGROUND_LIMIT_S - 1) is not Tick.TIME_LIMIT
    assert answer.tick(mono=100.0 + BACKGROUND_LIMIT_S) is Tick.TIME_LIMIT


def test_an_answer_not_in_the_background_is_still_abandoned_unread():
    answer = Answer(None, last_id=0, timing=TIMING)
    answer.begin(AnswerKind.RESPONSES, "r1", now=1e9, mono=100.0, head="{}", background=False, owner="")
    assert answer.tick(mono=100.0 + TIMING.grace_s) is Tick.ABANDON


def test_only_its_owner_may_touch_a_stored_response_and_nobody_another_kind_of_answer():
    row = AnswerRow(kind=AnswerKind.RESPONSES, request_id="r", serial=1, live=False, head="{}", owner="token:abc")
    assert row.owned_by("token:abc") and not row.owned_by("token:abd") and not row.owned_by("")
    assert AnswerRow(kind=AnswerKind.RESPONSES, request_id="r", serial=1, live=False, head="{}").owned_by("")
    assert not AnswerRow(kind=AnswerKind.CHAT, request_id="r", serial=1, live=False).owned_by("")


# --- what the Worker tells its object --------------------------------------------------------


def test_a_start_order_for_a_stored_response_goes_there_and_back_whole():
    start = StartOrder(request_id="r1", format=ReaderFormat.RESPONSES, call=CALL, response=order())
    again = StartOrder.from_json(start.to_json())
    assert again == start and again.kind is AnswerKind.RESPONSES


@pytest.mark.parametrize("change", [
    {"format": "sse"},  # a response's details on another kind of answer
    {"response": None},  # a response without them
    {"response.background": "yes"}, {"response.created_at": 1.5}, {"response.echo": []}, {"response.names": {"a": ["b"]}},
    {"response.owner": None}, {"response.input": "[]"},
])
def test_a_malformed_stored_response_order_is_refused(change):
    payload = json.loads(StartOrder(request_id="r1", format=ReaderFormat.RESPONSES, call=CALL, response=order()).to_json())
    for key, value in change.items():
        if key.startswith("response."):
            payload["response"][key.split(".", 1)[1]] = value
        else:
            payload[key] = value
    with pytest.raises(MalformedOrder):
        StartOrder.from_json(json.dumps(payload))


def test_a_failure_carries_the_objects_own_message_and_param():
    error = Failure.read(Failure.of(ApiError("invalid_request", "starting_after: no.", param="starting_after")).to_json())
    assert (error.code, error.message, error.param) == ("invalid_request", "starting_after: no.", "starting_after")
    assert Failure.read(json.dumps({"code": "invalid_request", "message": 5})).code == "internal_error"


# --- the encoder's stored side ---------------------------------------------------------------


def stored_encoder() -> ResponsesEncoder:
    return order().encoder(64)


def test_a_stored_response_has_the_objects_id_and_says_it_runs_in_the_background():
    encoder = stored_encoder()
    head = encoder.head(request_id="r1", model="m")
    assert head["id"] == RESPONSE_ID and head["background"] is True and head["status"] == "in_progress"
    Response.model_validate(head)
    text = encoder.meta(request_id="r1", model="m") + encoder.part_start(FIRST_TEXT, "") + encoder.delta("Hi", "")
    assert all(event["item_id"].startswith("msg_" + "ab" * 32) for event in parsed(text) if "item_id" in event)


def test_a_reader_cut_off_from_a_stored_response_goes_on_from_its_sequence_number_in_the_sdks_types():
    encoder = stored_encoder()
    frames = encoder.meta(request_id="r1", model="m") + encoder.part_start(FIRST_TEXT, "") + encoder.delta("Hello", "")
    sent = parsed(frames)
    head = json.dumps(encoder.head(request_id="r1", model="m"))
    for code in ("expired", "stopped", "interrupted", "deleted"):
        events = AnswerKind.RESPONSES.cut(code, request_id="r1", after=len(sent), head=head)
        data = [json.loads(event.data) for event in events]
        assert [event.id for event in events] == [len(sent) + 1, len(sent) + 2]
        assert [item["sequence_number"] for item in data] == [len(sent), len(sent) + 1]
        assert [item["type"] for item in data] == ["error", "response.failed"] and data[0]["code"] == code
        for item in data:
            EVENTS.validate_python(item)
        assert data[1]["response"]["id"] == RESPONSE_ID and data[1]["response"]["status"] == "failed"


def test_a_cancelled_response_ends_cancelled_without_an_error_object():
    encoder = stored_encoder()
    encoder.meta(request_id="r1", model="m")
    events = parsed(encoder.error(code="cancelled", message="The response was cancelled by its client.", request_id="r1"))
    assert events[-1]["type"] == "response.failed" and events[-1]["response"]["status"] == "cancelled"
    assert events[-1]["response"]["error"] is None
    EVENTS.validate_python(events[-1])


def test_a_stored_response_holds_a_quarter_of_what_one_not_stored_may():
    encoder = stored_encoder()
    encoder.meta(request_id="r1", model="m") + encoder.part_start(FIRST_TEXT, "")
    encoder.delta("x" * MAX_STORED_ANSWER_CHARS, "")
    assert not encoder.full
    encoder.delta("x", "")
    assert encoder.full


# --- a stored response read whole ------------------------------------------------------------


def whole(encoder: ResponsesEncoder, end: str | None) -> bytes:
    """A stored response's stream: its start, a piece of text, then `end` ("done", or an
    error code; None: cut, no terminal)."""
    frames = encoder.meta(request_id="r1", model="m") + encoder.part_start(FIRST_TEXT, "") + encoder.delta("Hello", "")
    if end == "done":
        frames += encoder.done(stats(finish_reason="stop"))
    elif end is not None:
        frames += encoder.error(code=end, message="The model stream failed.", request_id="r1")
    return frames.encode()


def test_a_stored_response_read_whole_is_its_last_response_object():
    encoder = stored_encoder()
    final = FinalResponse()
    data = whole(encoder, "done")
    for at in range(0, len(data), 7):
        final.feed(data[at : at + 7])
    body, status = final.result()
    assert status == 200 and Response.model_validate_json(body).output_text == "Hello"


def test_a_stored_response_read_whole_that_failed_or_was_cut_is_an_error_with_its_status():
    encoder = stored_encoder()
    final = FinalResponse()
    final.feed(whole(encoder, "generation_failed"))
    body, status = final.result()
    assert status == 502 and json.loads(body)["error"]["code"] == "generation_failed"
    cut = FinalResponse()
    cut.feed(whole(stored_encoder(), None))
    assert cut.result()[1] == 500


# --- previous_response_id and the request ----------------------------------------------------


def test_a_previous_response_comes_first_without_its_instructions_or_what_was_cut():
    history = {"input": [{"type": "message", "role": "user", "content": "one"}], "response": {"output": [
        {"type": "reasoning", "status": "completed", "summary": []},
        {"type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "two"}]},
        {"type": "function_call", "status": "incomplete", "call_id": "c", "name": "f", "arguments": "{"},
    ]}}
    merged = continued({"previous_response_id": "resp_x", "input": "three", "instructions": "new"}, history)
    assert "previous_response_id" not in merged and merged["instructions"] == "new"
    assert [item.get("role") for item in merged["input"]] == ["user", "assistant", "user"]
    request = validate_responses({**merged, "model": "@cf/zai-org/glm-4.7-flash"}, CONFIG)
    assert [message["content"] for message in request.turn.messages if message["role"] != "system"][-3:] == ["one", "two", "three"]
    assert continued({"previous_response_id": "resp_x", "input": 5}, history)["input"] == 5  # refused as sent


@pytest.mark.parametrize(("value", "key"), [
    (RESPONSE_ID, "ab" * 32), ("resp_123", None), ("resp_" + "A" * 64, None), ("resp_" + "a" * 65, None), (5, None),
    ("resp_" + "a" * 64 + "\n", None),
])
def test_only_a_stored_responses_id_names_an_object(value, key):
    assert stored_response_key(value) == key


def test_store_and_background_are_read_and_a_head_too_large_to_store_is_refused():
    base = {"model": "@cf/zai-org/glm-4.7-flash", "input": "hi"}
    # Stored unless told not to, as on OpenAI's API (issue 40).
    assert validate_responses(base, CONFIG).store is True
    assert validate_responses({**base, "store": False}, CONFIG).echo["store"] is False
    assert validate_responses({**base, "store": True}, CONFIG).echo["store"] is True
    background = validate_responses({**base, "background": True}, CONFIG)
    assert background.store and background.background
    with pytest.raises(ApiError) as refused:
        validate_responses({**base, "store": True, "instructions": "x" * MAX_STORED_HEAD_BYTES}, CONFIG)
    assert refused.value.param == "store"
    # Stored by default only, a head too large to keep is answered without, and its Response says so.
    unstored = validate_responses({**base, "instructions": "x" * MAX_STORED_HEAD_BYTES}, CONFIG)
    assert unstored.store is False and unstored.echo["store"] is False


def test_query_parameters_are_read_as_first_given():
    assert http.query_of("https://h/p?stream=true&starting_after=3&stream=false#x") == {"stream": "true", "starting_after": "3"}
    assert http.query_of("https://h/p") == {} and http.query_of("https://h/p?=1&a") == {"a": ""}


def test_a_stored_input_keeps_only_the_fields_the_model_reads():
    request = validate_responses({"model": "@cf/zai-org/glm-4.7-flash", "store": True, "input": [
        {"type": "reasoning", "id": "rs", "summary": [], "encrypted_content": "e" * 1000},
        {"role": "user", "content": [{"type": "input_text", "text": "hi", "extra": 1}], "mine": "x"},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}", "id": "fc", "status": "completed"},
        {"type": "function_call_output", "call_id": "c", "output": "ok", "id": "x"},
    ]}, CONFIG)
    assert request.input_items == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "ok"},
    ]


@pytest.mark.parametrize(("item", "kept"), [
    # Fields a part of its type does not have, found riding along a chain by the second attack.
    ({"role": "user", "content": [{"type": "input_text", "text": "t", "image_url": "A" * 100, "refusal": "B"}]},
     {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "t"}]}),
    ({"role": "assistant", "content": [{"type": "output_text", "text": "ok", "image_url": "C"}, {"type": "refusal", "refusal": "no", "text": "D"}]},
     {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}, {"type": "refusal", "refusal": "no"}]}),
    ({"role": "developer", "content": " " * 1000}, None),  # left out of the turn: not kept
    ({"type": "function_call", "call_id": "c", "name": "f", "arguments": "x" * 1000},
     {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}),  # sent to the model as {}
])
def test_a_stored_input_keeps_what_the_model_was_sent_and_nothing_beside(item, kept):
    call = item.get("type") == "function_call"
    last = {"type": "function_call_output", "call_id": "c", "output": [{"type": "input_text", "text": "a", "refusal": "F"}]} if call \
        else {"role": "user", "content": "next"}
    request = validate_responses({"model": "@cf/zai-org/glm-4.7-flash", "store": True,
                                  "input": [{"role": "user", "content": "hi"}, item, last]}, CONFIG)
    kept_last = {"type": "function_call_output", "call_id": "c", "output": "a"} if call else {"type": "message", "role": "user", "content": "next"}
    assert request.input_items == [{"type": "message", "role": "user", "content": "hi"}, *([] if kept is None else [kept]), kept_last]


def test_a_head_with_a_lone_surrogate_is_sized_as_it_will_be_kept():
    request = validate_responses({"model": "@cf/zai-org/glm-4.7-flash", "store": True, "input": "hi", "instructions": "a\ud800b",
                                  "metadata": {"k\ud800": "v\udfff"}}, CONFIG)
    assert request.store and request.echo["instructions"] == "a\ud800b"


def test_portable_json_keeps_utf8_and_escapes_a_lone_surrogate():
    assert portable_json({"t": "é"}) == '{"t": "é"}'
    assert portable_json({"t": "é\ud800"}) == '{"t": "\\u00e9\\ud800"}'
    assert json.loads(portable_json(["\udfff"])) == ["\udfff"]


def test_an_image_the_call_carries_travels_once_and_is_put_back_as_it_was():
    url, other = "data:image/png;base64,AAAA", "data:image/png;base64,BBBB"
    messages = [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": url}}]},
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": url}]},
             {"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": other}]},
             {"type": "function_call_output", "call_id": "c", "output": "x"}]
    sent = images_by_reference(items, messages)
    assert sent[0]["content"][1] == {"type": "input_image", "image_ref": 0} and sent[1] == items[1]  # not the call's: inline
    assert images_restored(json.loads(json.dumps(sent)), messages) == items
    for ref in (1, -1, "0", None):
        with pytest.raises(MalformedOrder):
            images_restored([{"type": "message", "role": "user", "content": [{"type": "input_image", "image_ref": ref}]}], messages)


def test_an_image_whose_header_the_worker_rewrote_still_travels_once():
    # The third attack: a PNG sent as image/jpeg is sent on as image/png, and an exact match
    # missed it, so it travelled twice.
    messages = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]
    items = [{"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": "data:image/jpeg;base64,AAAA"}]}]
    sent = images_by_reference(items, messages)
    assert sent[0]["content"] == [{"type": "input_image", "image_ref": 0}]
    assert images_restored(sent, messages)[0]["content"] == [{"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]


@pytest.mark.parametrize("text", ["x", "\u00e9", "\U0001f600"])
def test_an_order_past_what_one_rpc_message_carries_is_a_400_naming_the_field(text):
    fits = StartOrder(request_id="r", format=ReaderFormat.SSE, call=ModelCall(
        models=("m",), inputs={"messages": [{"role": "user", "content": text * 1000}]}))
    assert json.loads(fits.sent("messages"))["request_id"] == "r"
    per_character = 1 if text.isascii() else len(text.encode("utf-16-le"))  # as the order is measured
    count = MAX_ORDER_BYTES // per_character + 1
    order = StartOrder(request_id="r", format=ReaderFormat.SSE, call=ModelCall(
        models=("m",), inputs={"messages": [{"role": "user", "content": text * count}]}))
    with pytest.raises(ApiError) as refused:
        order.sent("input")
    assert refused.value.param == "input" and str(MAX_ORDER_BYTES) in refused.value.message

"""Tool calls through the Reframer: assembled from fragments, bounded, and written the same
by every encoding however the upstream stream is cut."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sse import (
    MAX_TOOL_CALL_CHARS,
    MAX_TOOL_CALLS,
    NDJSONEncoder,
    OpenAIChunkEncoder,
    OpenAICompletionEncoder,
    Reframer,
    SSEEncoder,
    UIMessageStreamEncoder,
)
from tests.sse.support import feed, ndjson_objects, protocol_events, sent


def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n"


def start(index: int, call_id: str | None, name: str, arguments: str = "") -> str:
    entry: dict[str, Any] = {"index": index, "type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id is not None:
        entry["id"] = call_id
    return chunk({"tool_calls": [entry]})


def fragment(index: int, arguments: str) -> str:
    return chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]})


FINISH = chunk({"content": ""}, "tool_calls")
DONE = "data: [DONE]\n\n"
TWO_CALLS = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "Checking."}),
    start(0, "call_a", "current_time"),
    fragment(0, '{"timezone":'),
    fragment(0, '"UTC"}'),
    start(1, "call_b", "current_time", '{"timezone":"Asia/Tokyo"}'),
    FINISH,
    DONE,
]


def sse(frames: list[str], **options: Any) -> tuple[list[tuple[str, dict[str, Any]]], Reframer]:
    reframer = Reframer(request_id="r", model="m", max_padding=0, **options)
    out = reframer.start() + "".join(reframer.feed(frame) for frame in frames) + reframer.finish()
    return protocol_events(out), reframer


def test_fragments_become_a_start_the_pieces_and_the_whole_call():
    events, reframer = sse(TWO_CALLS)
    kinds = [kind for kind, _ in events]
    assert kinds == ["meta", "delta", "tool_call_start", "tool_call_delta", "tool_call_delta", "tool_call",
                     "tool_call_start", "tool_call_delta", "tool_call", "done"]
    assert events[2][1] == {"index": 0, "call_id": "call_a", "name": "current_time", "p": ""}
    assert events[5][1] == {"index": 0, "call_id": "call_a", "name": "current_time", "arguments": '{"timezone":"UTC"}',
                            "input": {"timezone": "UTC"}}
    assert events[8][1]["input"] == {"timezone": "Asia/Tokyo"} and events[8][1]["call_id"] == "call_b"
    assert events[-1][1]["finish_reason"] == "tool_calls" and events[-1][1]["tool_calls"] == 2
    assert reframer.stats.tool_calls == 2


def test_a_call_is_complete_as_soon_as_the_next_starts_or_the_finish_reason_comes():
    reframer = Reframer(request_id="r", model="m", max_padding=0)
    reframer.start()
    outputs = [reframer.feed(frame) for frame in TWO_CALLS]
    # The first call is whole when the second starts; the second when the finish chunk
    # arrives, before [DONE] and before the stream closes.
    assert "event: tool_call\n" in outputs[5] and '"call_a"' in outputs[5]
    assert "event: tool_call\n" in outputs[6] and '"call_b"' in outputs[6]
    assert reframer.saw_done and "event: done" in reframer.finish()


def test_parallel_calls_sent_at_one_index_with_their_own_ids_stay_apart():
    frames = [start(0, "call_a", "f", '{"x":1}'), start(0, "call_b", "g", '{"y":2}'), FINISH, DONE]
    events, _ = sse(frames)
    calls = [fields for kind, fields in events if kind == "tool_call"]
    assert [(c["call_id"], c["name"], c["input"]) for c in calls] == [("call_a", "f", {"x": 1}), ("call_b", "g", {"y": 2})]


def test_a_provider_that_repeats_id_and_name_on_every_fragment_makes_one_call():
    frames = [start(0, "call_a", "f", '{"x":'), start(0, "call_a", "f", "1}"), FINISH, DONE]
    events, _ = sse(frames)
    calls = [fields for kind, fields in events if kind == "tool_call"]
    assert len(calls) == 1 and calls[0]["input"] == {"x": 1}


def test_the_null_finalization_entry_completes_the_call_before_it():
    final = 'data: {"tool_calls":[{"id":null,"type":null,"function":{"name":null,"arguments":""}}]}\n\n'
    reframer = Reframer(request_id="r", model="m", max_padding=0)
    reframer.start()
    reframer.feed(start(0, "call_a", "read", '{"file":"a.txt"}'))
    out = reframer.feed(final)
    assert "event: tool_call\n" in out
    reframer.feed(DONE)
    assert reframer.finish().startswith("event: done")


def test_native_calls_come_whole_with_object_arguments_and_get_an_id_when_they_have_none():
    frames = [
        'data: {"response":"","tool_calls":[{"name":"f","arguments":{"a":[1,2]}},{"name":"g","arguments":"{}"}],"p":"xyz"}\n\n',
        'data: {"response":"","usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}\n\n',
        DONE,
    ]
    events, _ = sse(frames)
    calls = [fields for kind, fields in events if kind == "tool_call"]
    assert [(c["call_id"], c["name"], c["input"]) for c in calls] == [("call_r_0", "f", {"a": [1, 2]}), ("call_r_1", "g", {})]
    # A native stream gives no finish_reason: an answer that called tools ended for them.
    assert events[-1] == ("done", {"finish_reason": "tool_calls", "usage": {"prompt_tokens": 1, "completion_tokens": 2,
                                   "total_tokens": 3}, "chunks": 0, "chars": 0, "skipped": 0, "tool_calls": 2})


def test_text_before_and_after_calls_is_kept():
    frames = [chunk({"content": "before "}), start(0, "c", "f", "{}"), chunk({"content": "after"}), FINISH, DONE]
    events, _ = sse(frames)
    assert [fields["text"] for kind, fields in events if kind == "delta"] == ["before ", "after"]


def test_a_call_the_model_made_though_no_tools_were_offered_is_never_lost():
    # The Reframer knows nothing of the request: a call always reaches the client.
    events, _ = sse([start(0, "c", "f", "{}"), chunk({"content": ""}, "stop"), DONE])
    assert [kind for kind, _ in events] == ["meta", "tool_call_start", "tool_call_delta", "tool_call", "done"]
    assert events[-1][1]["finish_reason"] == "tool_calls"


def test_an_answer_cut_at_its_budget_stays_length_and_its_broken_arguments_say_so():
    events, _ = sse([start(0, "c", "f", '{"x": "unfinish'), chunk({"content": ""}, "length"), DONE])
    call = next(fields for kind, fields in events if kind == "tool_call")
    assert call["input"] is None and call["input_error"] == "The arguments are not valid JSON."
    assert events[-1][1]["finish_reason"] == "length"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("", ({}, None)),
        ("  ", ({}, None)),
        ("[1]", (None, "The arguments are not a JSON object.")),
        ("nope", (None, "The arguments are not valid JSON.")),
        ("[" * 10_000, (None, "The arguments nest deeper than 32 levels.")),  # bounded, no stack overflow
        ('{"a":' * 33 + "1" + "}" * 33, (None, "The arguments nest deeper than 32 levels.")),  # sent back, it must fit a body
        ('{"a":' * 32 + "1" + "}" * 32, ({"a": json.loads('{"a":' * 31 + "1" + "}" * 31)}, None)),
        ('{"a":NaN}', (None, "The arguments are not valid JSON.")),
        ('{"x":1e400}', (None, "The arguments hold a number too large to represent.")),
    ],
)
def test_arguments_are_parsed_into_an_object_or_an_error(arguments: str, expected: tuple[object, object]):
    events, _ = sse([start(0, "c", "f", arguments), FINISH, DONE])
    call = next(fields for kind, fields in events if kind == "tool_call")
    assert (call["input"], call.get("input_error")) == expected


@pytest.mark.parametrize(
    "frames",
    [
        pytest.param([fragment(0, '{"x":1}')], id="arguments-for-a-call-never-started"),
        pytest.param([start(0, "a", "f"), start(1, "b", "g"), fragment(0, "{}")], id="arguments-for-a-call-already-ended"),
        pytest.param([start(0, "a\nb", "f")], id="id-with-a-line-end"),
        pytest.param([start(0, "a", "f" * 257)], id="name-too-long"),
        pytest.param([start(0, "a", "")], id="id-without-a-name"),
        pytest.param([chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": True}}]})],
                     id="arguments-a-boolean"),
    ],
)
def test_calls_that_cannot_be_passed_on_end_the_answer_with_one_clean_error(frames: list[str]):
    events, reframer = sse([*frames, FINISH, DONE])
    assert events[-1][0] == "error" and events[-1][1]["code"] == "upstream_malformed"
    assert [kind for kind, _ in events].count("error") == 1 and "done" not in [kind for kind, _ in events]
    assert reframer.last_error_code == "upstream_malformed"


def test_thousands_of_indexes_end_the_answer_at_the_call_limit():
    frames = [start(i, f"c{i}", "f", "{}") for i in range(5_000)]
    events, _ = sse([*frames, FINISH, DONE])
    assert sum(1 for kind, _ in events if kind == "tool_call_start") == MAX_TOOL_CALLS
    assert events[-1][1]["code"] == "tool_calls_too_large"


def test_megabytes_of_arguments_end_the_answer_at_the_per_call_bound():
    piece = "x" * 65_536
    frames = [start(0, "c", "f", '{"data":"'), *[fragment(0, piece) for _ in range(32)]]
    events, reframer = sse([*frames, FINISH, DONE])
    sent = sum(len(fields["arguments"]) for kind, fields in events if kind == "tool_call_delta")
    assert sent <= MAX_TOOL_CALL_CHARS
    assert events[-1][1]["code"] == "tool_calls_too_large"
    assert reframer.terminated


def test_many_calls_of_large_arguments_end_the_answer_at_the_per_answer_bound():
    piece = "y" * (100 * 1024)
    frames = [start(i, f"c{i}", "f", piece) for i in range(12)]
    events, _ = sse([*frames, FINISH, DONE])
    assert events[-1][1]["code"] == "tool_calls_too_large"
    assert sum(1 for kind, _ in events if kind == "tool_call_start") == 11  # 10 whole, the 11th went over


def test_a_stream_cut_mid_call_is_an_error_never_a_complete_call():
    reframer = Reframer(request_id="r", model="m", max_padding=0)
    out = reframer.start() + reframer.feed(start(0, "c", "f", '{"x":')) + reframer.finish()
    kinds = [kind for kind, _ in protocol_events(out)]
    assert "tool_call" not in kinds and kinds[-1] == "error"


def test_openai_collected_answer_has_tool_calls_and_null_content():
    reframer = Reframer(request_id="r", model="m", max_padding=0, encoder=OpenAICompletionEncoder(created=1))
    frames = [start(0, "call_a", "f", '{"x":1}'), FINISH, DONE]
    out = reframer.start() + "".join(reframer.feed(f) for f in frames) + reframer.finish()
    choice = json.loads(out)["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    assert choice["message"]["tool_calls"] == [{"id": "call_a", "type": "function", "function": {"name": "f", "arguments": '{"x":1}'}}]


def test_ui_stream_sends_input_error_with_the_raw_arguments():
    reframer = Reframer(request_id="r", model="m", max_padding=0, encoder=UIMessageStreamEncoder())
    frames = [start(0, "call_a", "f", "{broken"), FINISH, DONE]
    out = reframer.start() + "".join(reframer.feed(f) for f in frames) + reframer.finish()
    chunks = [json.loads(line[6:]) for line in out.split("\n") if line.startswith("data: {")]
    error = next(c for c in chunks if c["type"] == "tool-input-error")
    assert error["input"] == "{broken" and error["toolName"] == "f" and error["toolCallId"] == "call_a"
    assert chunks[-1] == {"type": "finish", "finishReason": "tool-calls"}


# --- any chunking, every encoding --------------------------------------------------------

ENCODINGS = {
    "sse": SSEEncoder,
    "ndjson": NDJSONEncoder,
    "openai": lambda: OpenAIChunkEncoder(created=1, include_usage=True),
    "openai-collected": lambda: OpenAICompletionEncoder(created=1),
    "ui": UIMessageStreamEncoder,
}
NATIVE = [
    'data: {"response":"Hi "}\n\n',
    'data: {"response":"","tool_calls":[{"name":"f","arguments":{"city":"東京 🚀"}},{"name":"g","arguments":"{\\"n\\": 1}"}]}\n\n',
    'data: {"response":"","usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}\n\n',
    DONE,
]


def reframed(encoding: str, data: str | bytes, cuts: list[int]) -> str:
    """Bytes are cut anywhere, inside characters too, and decoded by the Reframer."""
    reframer = Reframer(request_id="r", model="m", max_padding=0, encoder=ENCODINGS[encoding]())
    pieces = [reframer.start()]
    bounds = [0, *sorted(set(cuts)), len(data)]
    pieces += [feed(reframer, data[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]
    pieces.append(reframer.finish())
    return "".join(pieces)


@given(
    st.sampled_from(sorted(ENCODINGS)),
    st.sampled_from(["openai", "native"]),
    st.booleans(),
    st.data(),
)
def test_any_chunking_of_a_tool_call_stream_gives_the_same_output_in_every_encoding(
    encoding: str, framing: str, as_bytes: bool, data: Any
):
    text_stream = "".join(TWO_CALLS if framing == "openai" else NATIVE)
    stream: str | bytes = text_stream.encode() if as_bytes else text_stream
    cuts = data.draw(st.lists(st.integers(min_value=1, max_value=len(stream) - 1), max_size=30))
    whole = reframed(encoding, text_stream, [])
    assert reframed(encoding, stream, cuts) == whole
    text = sent(whole).decode()
    assert ("tool_calls" in text) or ("tool-input" in text) or ("tool_call" in text)


def test_ndjson_carries_the_same_tool_events_as_sse():
    reframer = Reframer(request_id="r", model="m", max_padding=0, encoder=NDJSONEncoder())
    out = reframer.start() + "".join(reframer.feed(f) for f in TWO_CALLS) + reframer.finish()
    ndjson = [(obj.pop("type"), obj) for obj in ndjson_objects(out)]
    assert ndjson == sse(TWO_CALLS)[0]


def test_an_answer_that_continues_a_ui_message_names_it_in_start_and_keeps_its_own_part_ids():
    # After a tool's result the SDK appends the answer to the message that made the call:
    # `start` must name that message, whatever characters its id has.
    reframer = Reframer(request_id="r", model="m", max_padding=0, encoder=UIMessageStreamEncoder(message_id='msg"1\\'))
    out = reframer.start() + reframer.feed('data: {"response":"hi"}\n\ndata: [DONE]\n\n') + reframer.finish()
    chunks = [json.loads(line[6:]) for line in out.split("\n") if line.startswith("data: {")]
    assert chunks[0]["type"] == "start" and chunks[0]["messageId"] == 'msg"1\\'
    assert [c["id"] for c in chunks if c["type"] == "text-start"] == ["r-1"]


def test_native_object_arguments_keep_every_number_as_sent():
    frame = 'data: {"response":"","tool_calls":[{"name":"f","arguments":{"x":1e400,"y":1.10,"z":[-0,7]}}]}\n\n'
    events, _ = sse([frame, DONE])
    call = next(data for kind, data in events if kind == "tool_call")
    assert call["arguments"] == '{"x":1e400,"y":1.10,"z":[-0,7]}'
    # Its parsed input cannot hold 1e400: the call says so instead of changing the number.
    assert call["input"] is None and "too large" in call["input_error"]


def test_an_argument_fragment_sent_as_a_number_is_its_lexeme():
    frames = [chunk({"tool_calls": [{"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": '{"n":'}}]}),
              'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":0.50}}]}}]}\n\n',
              chunk({"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]})]
    events, _ = sse([*frames, FINISH, DONE])
    call = next(data for kind, data in events if kind == "tool_call")
    assert call["arguments"] == '{"n":0.50}'


def test_two_calls_with_one_id_fail_the_stream():
    events, _ = sse([start(0, "dup", "f", "{}"), start(1, "dup", "g", "{}"), FINISH, DONE])
    assert events[-1][1]["code"] == "upstream_malformed"


def test_an_empty_finish_reason_on_every_chunk_means_not_yet():
    frames = [chunk({"tool_calls": [{"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a":'}}]}, ""),
              chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}, ""), FINISH, DONE]
    events, _ = sse(frames)
    call = next(fields for kind, fields in events if kind == "tool_call")
    assert call["input"] == {"a": 1} and events[-1][1]["finish_reason"] == "tool_calls"


def test_a_null_entry_with_an_index_also_completes_the_call():
    final = chunk({"tool_calls": [{"index": 0, "id": None, "type": None, "function": {"name": None, "arguments": ""}}]})
    reframer = Reframer(request_id="r", model="m", max_padding=0)
    reframer.start()
    reframer.feed(start(0, "call_a", "read", "{}"))
    assert "event: tool_call\n" in reframer.feed(final)


def test_text_after_a_call_completes_it_at_once():
    reframer = Reframer(request_id="r", model="m", max_padding=0)
    reframer.start()
    reframer.feed(start(0, "call_a", "f", '{"x":1}'))
    out = reframer.feed(chunk({"content": "Now I wait."}))
    assert "event: tool_call\n" in out and "event: delta" in out


@pytest.mark.parametrize("collected", [False, True])
def test_a_stop_sequence_after_a_call_keeps_the_call_and_says_tool_calls(collected: bool):
    encoder = OpenAICompletionEncoder(created=1) if collected else OpenAIChunkEncoder(created=1)
    reframer = Reframer(request_id="r", model="m", max_padding=0, encoder=encoder, stop=["STOP"])
    frames = [start(0, "c1", "f", '{"a":'), chunk({"content": "done. STOP here"}), FINISH, DONE]
    out = reframer.start() + "".join(reframer.feed(f) for f in frames) + reframer.finish()
    if collected:
        choice = json.loads(out)["choices"][0]
        assert choice["finish_reason"] == "tool_calls"
        assert choice["message"]["tool_calls"][0]["function"]["arguments"] == '{"a":'
        assert choice["message"]["content"] == "done. "
    else:
        assert '"finish_reason":"tool_calls"' in out and '"finish_reason":"stop"' not in out

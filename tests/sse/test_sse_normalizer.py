"""The upstream normalizer: Workers AI native and OpenAI-style frames to the text and
reasoning text they carry, read as the Reframer reads them (`read`)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sse import UpstreamNormalizer
from sse._jsonstr import scan_body
from sse._normalizer import fast_response, native_event_bodies

USAGE = {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}
NOTHING = ("", "")  # (text, reasoning text) of an event that carries neither


def dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


FRAMES = [
    pytest.param('{"response":"Hello","p":"abcd"}', ("Hello", ""), 0, id="native"),
    pytest.param('{"response":"Hi"}', ("Hi", ""), 0, id="native-without-padding"),
    pytest.param(
        '{"p":"ab","response":"Hi"}', ("Hi", ""), 0, id="native-padding-first"
    ),
    pytest.param('{ "response" : "Hi" }', ("Hi", ""), 0, id="native-with-whitespace"),
    pytest.param(
        '{"response":"a\\nb\\u00e9\\"\\\\"}',
        ('a\nb\u00e9"\\', ""),
        0,
        id="native-escapes",
    ),
    pytest.param(
        '{"response":"\\ud83d\\ude42"}',
        ("\U0001f642", ""),
        0,
        id="native-surrogate-pair-escape",
    ),
    pytest.param('{"response":42}', ("42", ""), 0, id="native-integer-response"),
    pytest.param('{"response":1.5}', ("1.5", ""), 0, id="native-float-response"),
    pytest.param('{"response":""}', NOTHING, 0, id="native-empty-text-emits-nothing"),
    pytest.param('{"response":null}', NOTHING, 0, id="native-null-response-is-known"),
    pytest.param('{"response":true}', NOTHING, 1, id="native-boolean-response-skipped"),
    pytest.param('{"response":["a"]}', NOTHING, 1, id="native-list-response-skipped"),
    pytest.param(
        '{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}',
        ("Hi", ""),
        0,
        id="openai-content",
    ),
    pytest.param(
        '{"choices":[{"delta":{"reasoning_content":"hmm"}}]}',
        ("", "hmm"),
        0,
        id="openai-reasoning",
    ),
    pytest.param(
        '{"choices":[{"delta":{"reasoning_content":"hmm","content":"Hi"}}]}',
        ("Hi", "hmm"),
        0,
        id="openai-reasoning-before-content-in-one-frame",
    ),
    pytest.param('{"choices":[{"delta":{"role":"assistant"}}]}', NOTHING, 0, id="openai-role-only"),
    pytest.param('{"choices":[{"delta":{"content":null}}]}', NOTHING, 0, id="openai-null-content"),
    pytest.param('{"choices":[]}', NOTHING, 0, id="openai-empty-choices"),
    pytest.param('{"choices":["x"]}', NOTHING, 1, id="openai-choice-not-an-object-skipped"),
    pytest.param('{"choices":[{"delta":"x"}]}', NOTHING, 1, id="openai-delta-not-an-object-skipped"),
    pytest.param('{"choices":"x"}', NOTHING, 1, id="openai-choices-not-a-list-skipped"),
    pytest.param("not json", NOTHING, 1, id="invalid-json-skipped"),
    pytest.param('{"response":"unterminated', NOTHING, 1, id="truncated-json-skipped"),
    pytest.param('{"response":"a\tb"}', NOTHING, 1, id="raw-control-character-skipped"),
    pytest.param('["response"]', NOTHING, 1, id="json-array-skipped"),
    pytest.param('"text"', NOTHING, 1, id="json-string-skipped"),
    pytest.param("", NOTHING, 1, id="empty-data-skipped"),
    pytest.param("{}", NOTHING, 1, id="empty-object-skipped"),
    pytest.param('{"eror":"boom"}', NOTHING, 1, id="unknown-shape-skipped"),
    pytest.param("[" * 100_000 + "]" * 100_000, NOTHING, 1, id="deeply-nested-json-skipped"),
    pytest.param(
        '{"response":"deep","x":' + "[" * 65 + "]" * 65 + "}", NOTHING, 1, id="over-the-depth-limit-skipped"
    ),
    pytest.param(
        '{"response":"ok","x":' + "[" * 63 + "]" * 63 + "}",
        ("ok", ""),
        0,
        id="at-the-depth-limit-read",
    ),
    pytest.param('{"response":NaN}', NOTHING, 1, id="nan-is-not-json-skipped"),
    pytest.param('{"response":-Infinity}', NOTHING, 1, id="infinity-is-not-json-skipped"),
    pytest.param('{"response":1e400}', ("1e400", ""), 0, id="number-too-large-for-a-float-kept-as-sent"),
    pytest.param('{"response":1.10}', ("1.10", ""), 0, id="native-float-keeps-its-lexeme"),
    pytest.param('{"response":-0}', ("-0", ""), 0, id="native-negative-zero-keeps-its-lexeme"),
    pytest.param('{"response":' + "9" * 5000 + "}", ("9" * 5000, ""), 0, id="integer-over-the-digit-limit-kept-as-sent"),
    pytest.param('{"response":"Hi","p":"a"b"}', NOTHING, 1, id="invalid-padding-makes-frame-invalid"),
    pytest.param('{"response":"Hi","p":"ab"}x', NOTHING, 1, id="trailing-garbage-skipped"),
    pytest.param(
        '{"response":"Hi"} ', ("Hi", ""), 0, id="trailing-whitespace-is-valid-json"
    ),
]


@pytest.mark.parametrize(("data", "carried", "skipped"), FRAMES)
def test_normalizer_reads_each_frame_into_its_text_and_reasoning(
    data: str, carried: tuple[str, str], skipped: int
) -> None:
    normalizer = UpstreamNormalizer()
    assert normalizer.read("message", data) == carried
    assert normalizer.skipped == skipped


@pytest.mark.parametrize(
    "data",
    [
        pytest.param("[DONE]", id="plain"),
        pytest.param("[DONE]  ", id="trailing-spaces"),
        pytest.param(" [DONE]", id="leading-space-from-data-colon-two-spaces"),
        pytest.param("[DONE]\t", id="trailing-tab"),
    ],
)
def test_done_sentinel_is_recognised_before_json_parsing(data: str) -> None:
    normalizer = UpstreamNormalizer()
    assert normalizer.read("message", data) == NOTHING
    assert normalizer.done
    assert normalizer.skipped == 0


def test_events_after_done_are_ignored_not_counted() -> None:
    normalizer = UpstreamNormalizer()
    normalizer.read("message", "[DONE]")
    assert normalizer.read("message", '{"response":"late"}') == NOTHING
    assert normalizer.read("message", "garbage") == NOTHING
    assert normalizer.skipped == 0


def test_done_inside_json_is_not_the_sentinel() -> None:
    normalizer = UpstreamNormalizer()
    normalizer.read("message", '"[DONE]"')
    assert not normalizer.done


def test_events_with_another_type_are_skipped_and_counted() -> None:
    normalizer = UpstreamNormalizer()
    assert normalizer.read("other", '{"response":"x"}') == NOTHING
    assert normalizer.skipped == 1 and normalizer.failure is None


@pytest.mark.parametrize("event_type", ["error", "Error", " error "])
def test_an_event_named_error_fails_the_answer(event_type: str) -> None:
    normalizer = UpstreamNormalizer()
    assert normalizer.read(event_type, '{"response":"x"}') == NOTHING
    assert normalizer.failure == "generation_failed"


def test_native_usage_is_recorded_and_keeps_only_the_three_counts() -> None:
    normalizer = UpstreamNormalizer()
    frame = {"response": "", "usage": {**USAGE, "extra": {"cached": 1}}}
    assert normalizer.read("message", dumps(frame)) == NOTHING
    assert normalizer.usage == USAGE
    assert normalizer.skipped == 0


@pytest.mark.parametrize(
    "usage",
    [
        pytest.param({"prompt_tokens": 3, "completion_tokens": 5}, id="missing-total"),
        pytest.param({**USAGE, "total_tokens": "8"}, id="string-count"),
        pytest.param({**USAGE, "total_tokens": True}, id="boolean-count"),
        pytest.param([1, 2, 3], id="not-an-object"),
    ],
)
def test_malformed_usage_is_not_recorded(usage: object) -> None:
    normalizer = UpstreamNormalizer()
    normalizer.read("message", dumps({"usage": usage}))
    assert normalizer.usage is None
    assert normalizer.skipped == 1


def test_openai_stream_records_finish_reason_and_final_usage_chunk() -> None:
    normalizer = UpstreamNormalizer()
    frames = [
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}],
            "usage": None,
        },
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": None,
        },
        {"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": USAGE},
    ]
    read = [normalizer.read("message", dumps(frame)) for frame in frames]
    assert read == [("Hi", ""), NOTHING, NOTHING]
    assert normalizer.finish_reason == "stop"
    assert normalizer.usage == USAGE
    assert normalizer.skipped == 0


def test_native_top_level_finish_reason_is_recorded() -> None:
    normalizer = UpstreamNormalizer()
    normalizer.read("message", '{"response":"","finish_reason":"length"}')
    assert normalizer.finish_reason == "length"


def test_native_tool_calls_are_counted_not_emitted() -> None:
    normalizer = UpstreamNormalizer()
    frame = {
        "response": "",
        "tool_calls": [{"name": "f", "arguments": {}}, {"name": "g", "arguments": {}}],
    }
    assert normalizer.read("message", dumps(frame)) == NOTHING
    assert normalizer.read("message", dumps({"tool_calls": [{"name": "h"}]})) == NOTHING
    assert normalizer.tool_calls == 3
    assert normalizer.skipped == 0


@pytest.mark.parametrize("tool_calls", ['"f()"', '{"name":"f"}', '["f"]', "[5]"])
def test_native_tool_calls_in_a_shape_no_provider_sends_fail_the_stream(tool_calls: str) -> None:
    # Never dropped in silence: a call the model made would be lost.
    normalizer = UpstreamNormalizer()
    normalizer.read("message", '{"response":"","tool_calls":' + tool_calls + "}")
    assert (normalizer.tool_calls, normalizer.failure) == (0, "upstream_malformed")
    assert normalizer.read("message", '{"response":"more"}') == NOTHING  # nothing is read after it


def test_null_tool_calls_are_none() -> None:
    normalizer = UpstreamNormalizer()
    assert normalizer.read("message", '{"response":"a","tool_calls":null}') == ("a", "")
    assert normalizer.failure is None


def test_openai_tool_call_fragments_count_once_per_call() -> None:
    normalizer = UpstreamNormalizer()
    first = {
        "choices": [
            {
                "delta": {
                    "tool_calls": [
                        {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": ""}}
                    ]
                }
            }
        ]
    }
    more = {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]}
    for frame in (first, more, more):
        assert normalizer.read("message", dumps(frame)) == NOTHING
    assert normalizer.tool_calls == 1


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param('{"response":"Hi","p":"abc"}', "Hi", id="with-padding"),
        pytest.param('{"response":"Hi"}', "Hi", id="without-padding"),
        pytest.param('{"response":"a\\"b"}', 'a"b', id="escaped-quote"),
        pytest.param('{"response":"Hi","p":"a\\"b"}', "Hi", id="escaped-padding"),
        pytest.param('{"response":"Hi","p":"ab"', None, id="unclosed-object"),
        pytest.param('{"response":"Hi","p":"ab"}}', None, id="extra-brace"),
        pytest.param('{"response":"Hi"]', None, id="wrong-closer"),
        pytest.param('{"response":"Hi","usage":{}}', None, id="other-field-takes-general-path"),
        pytest.param('{"response":"Hi","p":"ab', None, id="unterminated-padding"),
        pytest.param('{"response":"\\x"}', None, id="bad-escape"),
        pytest.param('{"response": "Hi"}', None, id="whitespace-takes-general-path"),
    ],
)
def test_fast_response_agrees_with_json_loads_or_declines(data: str, expected: str | None) -> None:
    assert fast_response(data) == expected
    if expected is not None:
        assert json.loads(data)["response"] == expected


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        pytest.param(
            'data: {"response":"a","p":"xy"}\n\ndata: {"response":"b"}\n\n',
            ["a", "b"],
            id="two-events",
        ),
        pytest.param(
            'data: {"response":"a\\n\\u00e9"}\n\n', ["a\\n\\u00e9"], id="bodies-stay-escaped"
        ),
        pytest.param('data: {"response":""}\n\n', None, id="empty-text-goes-general"),
        pytest.param('data: {"response":"a"}\n\n\n', None, id="extra-blank-line"),
        pytest.param(': c\ndata: {"response":"a"}\n\n', None, id="comment"),
        pytest.param(
            'data: {"response":"a"}\ndata: {"response":"b"}\n\n', None, id="multi-line-data"
        ),
        pytest.param('data: {"response":"a\\q"}\n\n', None, id="invalid-escape"),
        pytest.param('data: {"response":"a\\u12"}\n\n', None, id="short-unicode-escape"),
        pytest.param('data: {"response":"a\x01"}\n\n', None, id="raw-control-character"),
        pytest.param('data: {"response":"a","p":"x\\"y"}\n\n', None, id="escape-in-padding"),
        pytest.param("data: [DONE]\n\n", None, id="done"),
    ],
)
def test_native_event_bodies_reads_only_blocks_of_plain_native_events(
    block: str, expected: list[str] | None
) -> None:
    assert native_event_bodies(block) == expected


def test_scan_body_decodes_a_json_string_body() -> None:
    assert scan_body("a\\n\\u00e9\\ud83d\\ude42") == "a\n\u00e9\U0001f642"


@pytest.mark.parametrize(
    ("sent", "recorded"),
    [
        pytest.param("stop", "stop", id="stop"),
        pytest.param("length", "length", id="length"),
        pytest.param("tool_calls", "tool_calls", id="tool-calls"),
        pytest.param("x" * 200_000, "other", id="huge-value-never-copied"),
        pytest.param("Here is the secret answer", "other", id="text-never-copied"),
    ],
)
def test_finish_reason_keeps_known_values_and_reports_the_rest_as_other(
    sent: str, recorded: str
) -> None:
    for frame in (
        dumps({"response": "", "finish_reason": sent}),
        dumps({"choices": [{"delta": {}, "finish_reason": sent}]}),
    ):
        normalizer = UpstreamNormalizer()
        normalizer.read("message", frame)
        assert normalizer.finish_reason == recorded
        assert normalizer.skipped == 0


@pytest.mark.parametrize(
    "count",
    [
        pytest.param(-1, id="negative"),
        pytest.param(2**53, id="beyond-exact-in-javascript"),
        pytest.param(10**4000, id="thousands-of-digits"),
    ],
)
def test_usage_with_counts_no_client_can_hold_is_not_recorded(count: int) -> None:
    normalizer = UpstreamNormalizer()
    usage = {**USAGE, "total_tokens": count}
    normalizer.read("message", '{"response":"","usage":' + json.dumps(usage) + "}")
    assert normalizer.usage is None


def workers_ai_chunk(delta: dict, completion: int, finish: str | None = None, cached: int | None = 0) -> str:
    """A chunk as Workers AI streams it for vLLM-served models (2026): running usage on
    every chunk, finish_reason only on the usage chunk."""
    usage: dict = {"prompt_tokens": 20, "completion_tokens": completion, "total_tokens": 20 + completion}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice], "usage": usage})


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_is_read_from_either_field_current_models_send(field: str) -> None:
    normalizer = UpstreamNormalizer()
    read = normalizer.read("message", workers_ai_chunk({field: "Let me think"}, 1))
    assert read == ("", "Let me think") and normalizer.skipped == 0


def test_running_usage_keeps_the_last_and_cached_tokens_travel_with_it() -> None:
    normalizer = UpstreamNormalizer()
    frames = [
        workers_ai_chunk({"role": "assistant", "content": ""}, 0, cached=16),
        workers_ai_chunk({"reasoning": "hm"}, 1, cached=16),
        workers_ai_chunk({"content": "Hi"}, 2, cached=16),
        workers_ai_chunk({"content": ""}, 2, finish="stop", cached=16),
        dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
               "usage": {"prompt_tokens": 20, "completion_tokens": 2, "total_tokens": 22, "prompt_tokens_details": {"cached_tokens": 16}}}),
    ]
    read = [normalizer.read("message", frame) for frame in frames]
    assert read == [NOTHING, ("", "hm"), ("Hi", ""), NOTHING, NOTHING]
    assert normalizer.usage == {"prompt_tokens": 20, "completion_tokens": 2, "total_tokens": 22, "cached_tokens": 16}
    assert normalizer.finish_reason == "stop" and normalizer.skipped == 0


@pytest.mark.parametrize("details", [None, {}, {"cached_tokens": -1}, {"cached_tokens": True}, {"cached_tokens": "3"}, [], 5])
def test_cached_tokens_that_are_not_a_count_are_left_out(details: object) -> None:
    normalizer = UpstreamNormalizer()
    normalizer.read("message", dumps({"choices": [], "usage": {**USAGE, "prompt_tokens_details": details}}))
    assert normalizer.usage == USAGE


def general_and_fast(frames: list[str]) -> tuple[tuple, tuple]:
    """What the normalizer makes of `frames` through `read` (fast paths on) and through the
    general path alone."""
    fast, general = UpstreamNormalizer(), UpstreamNormalizer()
    fast_out = [fast.read("message", frame) for frame in frames]
    general_out = [general.frame(frame) for frame in frames]
    return (fast_out, fast.usage, fast.skipped, fast.finish_reason), (general_out, general.usage, general.skipped, general.finish_reason)


OPENAI_CHUNKS = [
    pytest.param([workers_ai_chunk({"content": " hi"}, 1)], id="content"),
    pytest.param([workers_ai_chunk({"reasoning_content": "hm"}, 1), workers_ai_chunk({"reasoning": "hm"}, 2)], id="reasoning-fields"),
    pytest.param([workers_ai_chunk({"content": 'a\\"\\n\\u00e9\\ud83d\\ude42'}, 1)], id="escapes"),
    pytest.param([workers_ai_chunk({"content": ""}, 1)], id="empty-text"),
    pytest.param([workers_ai_chunk({"content": "a"}, 1, cached=None)], id="no-cached-tokens"),
    pytest.param([workers_ai_chunk({"content": "a"}, 1), workers_ai_chunk({"content": "b"}, 2)], id="last-usage-wins"),
    pytest.param([workers_ai_chunk({"content": "a"}, 1), '{"choices":[],"usage":{"prompt_tokens":"x"}}'], id="invalid-usage-later-keeps-earlier"),
    pytest.param([workers_ai_chunk({"content": "a"}, 1).replace('"prompt_tokens":20', '"prompt_tokens":020')], id="leading-zero-is-not-json"),
    pytest.param([workers_ai_chunk({"content": "a"}, 1).replace('"created":1', '"created":\u0661')], id="arabic-digit-is-not-json"),
    pytest.param([workers_ai_chunk({"content": "a"}, 1).replace('"total_tokens":21', '"prompt_tokens":21')], id="a-count-missing"),
    pytest.param([workers_ai_chunk({"content": "a"}, 1).replace('"usage":{', '"usage":null,"x":{')], id="other-field-after"),
    pytest.param([workers_ai_chunk({"content": "a"}, 1).replace('"id":"chatcmpl-1"', '"id":"a\\"b"')], id="escaped-id"),
    pytest.param([workers_ai_chunk({"content": "a\x01"}, 1)], id="raw-control-character"),
    pytest.param([workers_ai_chunk({"content": "a"}, 1)[:-1]], id="cut-short"),
    pytest.param([workers_ai_chunk({"content": "a"}, 1).replace('"usage":{"prompt_tokens":20', '"usage":{"prompt_tokens":20,"prompt_tokens":5')],
                 id="duplicate-key"),
]


@pytest.mark.parametrize("frames", OPENAI_CHUNKS)
def test_the_openai_fast_path_reads_exactly_what_the_general_path_reads(frames: list[str]) -> None:
    fast, general = general_and_fast(frames)
    assert fast == general


def test_the_openai_fast_path_takes_the_common_chunk() -> None:
    normalizer = UpstreamNormalizer()
    normalizer.frame = None  # type: ignore[method-assign]  # the general path must not run
    assert normalizer.read("message", workers_ai_chunk({"content": " hi"}, 1)) == (" hi", "")
    assert normalizer.read("message", workers_ai_chunk({"reasoning": "hm"}, 2)) == ("", "hm")
    assert normalizer.usage == {"prompt_tokens": 20, "completion_tokens": 2, "total_tokens": 22, "cached_tokens": 0}


@given(st.text(max_size=30), st.text(max_size=10), st.integers(min_value=0, max_value=2**60), st.sampled_from(["content", "reasoning", "reasoning_content"]))
def test_the_openai_fast_path_matches_the_general_path_for_any_text_and_counts(text: str, ident: str, count: int, field: str) -> None:
    frame = dumps({"id": ident, "object": "chat.completion.chunk", "created": count, "model": "m",
                   "choices": [{"index": 0, "delta": {field: text}, "logprobs": None, "finish_reason": None}],
                   "usage": {"completion_tokens": count, "prompt_tokens": 1, "total_tokens": count}})
    fast, general = general_and_fast([frame, frame.replace("\\", "\\\\", 1)])
    assert fast == general


LATER_USAGE_THE_GENERAL_PATH_REFUSES = [
    pytest.param('"completion_tokens":2,', '"completion_tokens":9007199254740993,', id="over-2**53"),
    pytest.param('"prompt_tokens":20,"completion_tokens":2,"total_tokens":22', '"total_tokens":1,"total_tokens":2,"prompt_tokens":3',
                 id="duplicate-keys"),
    pytest.param('"completion_tokens":2,"total_tokens":22', '"total_tokens":22,"completion_tokens":2', id="other-order-is-fine"),
]


@pytest.mark.parametrize(("old", "new"), LATER_USAGE_THE_GENERAL_PATH_REFUSES)
def test_a_later_chunk_with_a_usage_the_general_path_would_refuse_keeps_the_earlier_one(old: str, new: str) -> None:
    # Found by the attack on issue 16: the fast path had replaced a deferred valid usage.
    frames = [workers_ai_chunk({"content": "a"}, 1), workers_ai_chunk({"content": "b"}, 2).replace(old, new)]
    assert new in frames[1], "the case changes the second chunk"
    fast, general = general_and_fast(frames)
    assert fast == general and fast[1] is not None


def test_more_cached_than_prompt_tokens_is_left_out() -> None:
    normalizer = UpstreamNormalizer()
    normalizer.read("message", dumps({"choices": [], "usage": {**USAGE, "prompt_tokens_details": {"cached_tokens": 4}}}))
    assert normalizer.usage == USAGE

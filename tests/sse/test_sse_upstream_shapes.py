"""The upstream shapes of issue 27, read by the core: numbers and content parts as text,
in-band failures, finish-reason aliases, stray BOMs, and stop sequences beside tool
calls. Each case runs whole, a character at a time and at random splits, as text and as
bytes; a property checks that every encoding tells the same outcome however the stream
is cut."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sse import (
    Encoder,
    NDJSONEncoder,
    OpenAIChunkEncoder,
    OpenAICompletionEncoder,
    Reframer,
    SSEEncoder,
    UIMessageStreamEncoder,
)
from tests.sse.support import feed, ndjson_objects, parse_chunks, protocol_events, run_reframer, sent, text_and_bytes

DONE = "data: [DONE]\n\n"


def frame(value: str) -> str:
    return f"data: {value}\n\n"


def content(raw: str) -> str:
    """An OpenAI-style chunk whose delta.content is the raw JSON text `raw`."""
    return frame('{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":' + raw + '},"finish_reason":null}]}')


def finish(reason: str) -> str:
    return frame('{"choices":[{"index":0,"delta":{},"finish_reason":' + json.dumps(reason) + "}]}")


VLLM_ERROR = frame('{"error":{"message":"CUDA out of memory","type":"InternalServerError","param":null,"code":500}}')
ERROR_BODY = frame('{"object":"error","message":"upstream died","type":"BadRequestError","param":null,"code":400}')


def outcome(output: str) -> tuple[str, str, str | None, int | None]:
    """(text, terminal kind, its code or finish reason, skipped) of our SSE protocol."""
    events = protocol_events(output)
    text = "".join(data["text"] for kind, data in events if kind == "delta")
    kind, data = events[-1]
    if kind == "error":
        return text, "error", data["code"], None
    assert kind == "done"
    return text, "done", data["finish_reason"], data["skipped"]


CASES = [
    # Numbers are text, exactly as sent.
    pytest.param([content('"It is "'), content("5"), content('"."'), DONE], ("It is 5.", "done", None, 0), id="integer-content"),
    pytest.param([content('"$"'), content("0.005"), DONE], ("$0.005", "done", None, 0), id="fraction-content-keeps-its-digits"),
    pytest.param([content("1.10"), content("1e400"), content("-0"), DONE], ("1.101e400-0", "done", None, 0), id="lexemes-kept"),
    pytest.param([content('"["'), content("1"), content('"]"'), DONE], ("[1]", "done", None, 0), id="a-citation"),
    pytest.param([frame('{"response":1.10}'), frame('{"response":1e400}'), DONE], ("1.101e400", "done", None, 0),
                 id="native-numbers-keep-their-lexemes"),
    # Content parts are text; other values are counted, never dropped in silence.
    pytest.param([content('[{"type":"text","text":"a"},{"type":"text","text":"b"}]'), DONE], ("ab", "done", None, 0),
                 id="content-parts"),
    pytest.param([content('[{"type":"text","text":"a"},{"type":"image_url","image_url":{}}]'), DONE], ("a", "done", None, 1),
                 id="a-part-that-is-not-text-is-counted"),
    pytest.param([content("true"), content('{"a":1}'), content("[1]"), content('"ok"'), DONE], ("ok", "done", None, 3),
                 id="booleans-objects-and-arrays-are-counted"),
    pytest.param([content("null"), content('"x"'), DONE], ("x", "done", None, 0), id="null-is-no-text"),
    # The first text field present.
    pytest.param([frame('{"choices":[{"index":0,"delta":{"text":"d"}}]}'), frame('{"choices":[{"index":0,"text":"t"}]}'),
                  frame('{"choices":[{"index":0,"message":{"role":"assistant","content":"m"}}]}'), DONE],
                 ("dtm", "done", None, 0), id="delta-text-choice-text-message-content"),
    # In-band failures end the answer with an error, whatever follows.
    pytest.param([content('"Partial answer"'), VLLM_ERROR, DONE], ("Partial answer", "error", "generation_failed", None),
                 id="vllm-error-then-done"),
    pytest.param([content('"Partial"'), ERROR_BODY, content('"more"'), DONE], ("Partial", "error", "generation_failed", None),
                 id="a-bare-error-body-and-nothing-read-after"),
    pytest.param([content('"x"'), frame('{"error":{"message":"3040: Capacity temporarily exceeded","code":3040}}'), DONE],
                 ("x", "error", "model_unavailable", None), id="a-workers-ai-capacity-code"),
    pytest.param([content('"x"'), finish("error"), DONE], ("x", "error", "generation_failed", None), id="finish-reason-error"),
    pytest.param([frame('{"response":"x","error":null}'), DONE], ("x", "done", None, 0), id="a-null-error-is-no-error"),
    # Found by the attack on this issue: failures in other places and spellings.
    pytest.param([content('"x"'), frame('{"choices":[{"index":0,"delta":{},"finish_reason":null,"error":{"message":"m","code":500}}]}'), DONE],
                 ("x", "error", "generation_failed", None), id="an-error-inside-a-choice"),
    pytest.param([content('"x"'), frame('{"choices":[{"index":0,"delta":{"content":"","error":"m"}}]}'), DONE],
                 ("x", "error", "generation_failed", None), id="an-error-inside-a-delta"),
    pytest.param([content('"x"'), frame('{"choices":[{"index":0,"delta":{}},{"index":1,"delta":{},"finish_reason":"error"}]}'), DONE],
                 ("x", "error", "generation_failed", None), id="a-failed-second-choice"),
    pytest.param([content('"x"'), finish(" ERROR "), DONE], ("x", "error", "generation_failed", None), id="error-in-another-spelling"),
    pytest.param([content('"x"'), finish("cancelled"), DONE], ("x", "error", "generation_failed", None), id="cancelled"),
    pytest.param([content('"x"'), frame('{"choices":[{"index":0,"delta":{},"finish_reason":{"type":"error"}}]}'), DONE],
                 ("x", "error", "upstream_malformed", None), id="a-finish-reason-that-is-not-text"),
    pytest.param([content('"x"'), 'event: error\ndata: {"error":{"message":"m"}}\n\n', DONE],
                 ("x", "error", "generation_failed", None), id="an-event-named-error"),
    pytest.param([content('"x"'), frame('{"type":"error","error":{"type":"overloaded_error","message":"m"}}'), DONE],
                 ("x", "error", "generation_failed", None), id="an-anthropic-style-error"),
    pytest.param([content('"x"'), frame('{"result":null,"success":false,"errors":[{"code":3040,"message":"m"}]}'), DONE],
                 ("x", "error", "model_unavailable", None), id="cloudflares-api-envelope"),
    pytest.param([content('"x"'), frame('{"error":0}'), DONE], ("x", "error", "generation_failed", None), id="error-zero-is-an-error"),
    pytest.param([frame('{"choices":[{"index":0,"delta":{"content":"","text":"T"}}]}'), DONE], ("T", "done", None, 0),
                 id="an-empty-content-beside-text"),
    pytest.param([frame('{"choices":[{"index":0,"delta":{"content":"A","text":"B"}}]}'), DONE], ("A", "done", None, 1),
                 id="two-different-texts-are-counted"),
    pytest.param([frame('{"choices":[{"index":0,"delta":{"content":"A","text":"A"}}]}'), DONE], ("A", "done", None, 0),
                 id="the-same-text-twice-is-one"),
    pytest.param([frame('{"response":"R","choices":[{"index":0,"delta":{"content":"C"}}]}'), DONE], ("R", "done", None, 1),
                 id="a-response-and-a-choice-text-are-counted"),
    # Workers AI's codes, wherever the error carries them; any other value is a plain failure.
    pytest.param([content('"x"'), frame('{"error":"InferenceUpstreamError: 3040: Capacity temporarily exceeded"}'), DONE],
                 ("x", "error", "model_unavailable", None), id="a-code-at-the-head-of-an-error-string"),
    pytest.param([content('"x"'), frame('{"object":"error","message":"3007: Request timeout","code":408}'), DONE],
                 ("x", "error", "upstream_timeout", None), id="a-code-in-the-message-beside-an-http-status"),
    pytest.param([content('"x"'), frame('{"error":{"code":"3036","message":"m"}}'), DONE],
                 ("x", "error", "model_unavailable", None), id="a-code-as-a-string"),
    pytest.param([content('"x"'), frame('{"error":{"code":[3040],"message":{"a":1}}}'), DONE],
                 ("x", "error", "generation_failed", None), id="a-code-and-message-of-other-shapes"),
    pytest.param([frame('{"response":"x","finish_reason":{"type":"error"}}'), DONE], ("x", "error", "upstream_malformed", None),
                 id="a-native-finish-reason-that-is-not-text"),
    pytest.param([frame('{"response":"x","finish_reason":null}'), DONE], ("x", "done", None, 0), id="a-native-null-finish-reason"),
    pytest.param([content('"x"'), frame('{"choices":[{"index":0,"delta":{"content":" last"},"finish_reason":"error"}]}'), DONE],
                 ("x last", "error", "generation_failed", None), id="the-text-of-the-failing-frame-is-kept"),
    # A repeated finish never makes a cut answer whole.
    pytest.param([content('"x"'), finish("length"), finish("stop"), DONE], ("x", "done", "length", 0), id="length-then-stop"),
    pytest.param([content('"x"'), finish("repetition"), finish("stop"), DONE], ("x", "done", "other", 0), id="other-then-stop"),
    pytest.param([content('"x"'), finish("stop"), finish("content_filter"), DONE], ("x", "done", "content_filter", 0),
                 id="stop-then-content-filter"),
    # Finish reasons: aliases mapped, the unknown kept as "other".
    pytest.param([content('"x"'), finish("max_tokens"), DONE], ("x", "done", "length", 0), id="max-tokens-is-length"),
    pytest.param([content('"x"'), finish("eos"), DONE], ("x", "done", "stop", 0), id="eos-is-stop"),
    pytest.param([content('"x"'), finish("end_turn"), DONE], ("x", "done", "stop", 0), id="end-turn-is-stop"),
    pytest.param([content('"x"'), finish("content_filter"), DONE], ("x", "done", "content_filter", 0), id="content-filter"),
    pytest.param([content('"x"'), finish("repetition"), DONE], ("x", "done", "other", 0), id="an-unknown-reason-is-other"),
    # Reasoning: numbers too, and the field that is not empty.
    pytest.param([frame('{"choices":[{"index":0,"delta":{"reasoning_content":5}}]}'), DONE], ("", "done", None, 0),
                 id="numeric-reasoning"),
    # A BOM before a later line: the line is ignored (WHATWG) and counted.
    pytest.param(["\ufeff" + frame('{"response":"a"}'), "\ufeff" + frame('{"response":"b"}'), DONE], ("a", "done", None, 1),
                 id="the-leading-bom-is-stripped-a-second-is-counted"),
    pytest.param([frame('{"response":"a"}'), "\ufeff" + frame('{"response":"b"}'), DONE], ("a", "done", None, 1),
                 id="a-bom-before-a-later-line-is-counted"),
    pytest.param([frame('{"response":"a"}'), DONE, "\ufeff" + frame('{"response":"b"}')], ("a", "done", None, 0),
                 id="a-bom-after-done-is-not-the-answers"),
]


def make() -> Reframer:
    return Reframer(request_id="r", model="m", max_padding=0)


@pytest.mark.parametrize(("frames", "expected"), CASES)
def test_each_shape_gives_its_outcome_however_the_stream_is_cut(frames: list[str], expected: tuple[Any, ...]) -> None:
    for how, chunks in text_and_bytes("".join(frames)):
        assert outcome(run_reframer(make, chunks)) == expected, how


def test_reasoning_reads_the_field_that_is_not_empty_and_keeps_numbers() -> None:
    frames = [frame('{"choices":[{"index":0,"delta":{"reasoning_content":"","reasoning":"r1"}}]}'),
              frame('{"choices":[{"index":0,"delta":{"reasoning_content":0.50}}]}'), DONE]
    events = protocol_events(run_reframer(make, frames))
    assert [data["text"] for kind, data in events if kind == "reasoning"] == ["r1", "0.50"]


def test_text_held_for_a_stop_sequence_goes_out_before_a_tool_call_that_follows() -> None:
    call = frame('{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function",'
                 '"function":{"name":"f","arguments":"{}"}}]}}]}')
    for how, chunks in text_and_bytes("".join([content('"Let me check. S"'), call, finish("tool_calls"), DONE])):
        output = run_reframer(lambda: Reframer(request_id="r", model="m", max_padding=0, stop=["STOP"]), chunks)
        kinds = [(kind, data.get("text")) for kind, data in protocol_events(output) if kind in ("delta", "tool_call_start")]
        assert "".join(text for kind, text in kinds if kind == "delta") == "Let me check. S", how
        assert kinds[-1] == ("tool_call_start", None), how


# --- every encoding tells the same outcome ------------------------------------------------


def _sse_data(output: str) -> list[dict[str, Any]]:
    return [json.loads(event.data) for event in parse_chunks([sent(output)]).events if event.data != "[DONE]"]


def _ours(output: str) -> tuple[str, str]:
    text, kind, code, _ = outcome(output)
    return text, kind if kind == "done" else f"error:{code}"


def _ndjson(output: str) -> tuple[str, str]:
    objects = ndjson_objects(output)
    text = "".join(obj["text"] for obj in objects if obj["type"] == "delta")
    last = objects[-1]
    return text, "done" if last["type"] == "done" else f"error:{last['code']}"


def _ui(output: str) -> tuple[str, str]:
    chunks = _sse_data(output)
    text = "".join(chunk["delta"] for chunk in chunks if chunk["type"] == "text-delta")
    last = chunks[-1]
    return text, "done" if last["type"] == "finish" else "error:" + last["errorText"].split("(")[1].split(",")[0]


def _openai_chunks(output: str) -> tuple[str, str]:
    chunks = _sse_data(output)
    if "error" in chunks[-1]:
        ending = f"error:{chunks[-1]['error']['code']}"
    else:
        assert output.endswith("data: [DONE]\n\n")
        ending = "done"
    text = "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks if chunk.get("choices"))
    return text, ending


def _openai_completion(output: str) -> tuple[str, str]:
    body = json.loads(output)
    if "error" in body:
        return "", f"error:{body['error']['code']}"
    return body["choices"][0]["message"]["content"] or "", "done"


ENCODINGS: list[tuple[Callable[[], Encoder], Callable[[str], tuple[str, str]]]] = [
    (SSEEncoder, _ours),
    (NDJSONEncoder, _ndjson),
    (UIMessageStreamEncoder, _ui),
    (lambda: OpenAIChunkEncoder(created=0), _openai_chunks),
    (lambda: OpenAICompletionEncoder(created=0), _openai_completion),
]

PIECES = st.sampled_from([
    content('"word "'), content("5"), content("0.005"), content("1.10"), content("-0"), content("true"),
    content('[{"type":"text","text":"part"}]'), frame('{"response":2.50}'), frame('{"response":"n"}'),
    VLLM_ERROR, ERROR_BODY, finish("error"), finish("max_tokens"), finish("stop"), "\ufeff" + frame('{"response":"b"}'),
    ": ping\n\n", DONE,
])


@given(st.lists(PIECES, max_size=10), st.booleans(), st.randoms(use_true_random=False))
def test_every_encoding_tells_the_same_outcome_however_the_stream_is_cut(pieces: list[str], ends: bool, rng: random.Random) -> None:
    data = "".join(pieces)
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 8)))) if len(data) > 1 else []
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    outcomes = set()
    for make_encoder, read in ENCODINGS:
        reframer = Reframer(request_id="r", model="m", max_padding=0, encoder=make_encoder())
        output = reframer.start() + "".join(feed(reframer, chunk) for chunk in chunks) + reframer.finish()
        text, ending = read(output)
        # A collected completion keeps no text of a failed answer: then the ending alone.
        outcomes.add((text if ending == "done" else "", ending))
    assert len(outcomes) == 1, outcomes


@pytest.mark.parametrize(
    ("completion_tokens", "reason"), [pytest.param(8, "length", id="budget-spent"), pytest.param(7, None, id="under-budget")]
)
def test_a_native_answer_that_spent_its_budget_ends_as_cut_at_the_length_limit(completion_tokens: int, reason: str | None) -> None:
    usage = f'{{"prompt_tokens":3,"completion_tokens":{completion_tokens},"total_tokens":{3 + completion_tokens}}}'
    frames = [frame('{"response":"Cut"}'), frame('{"response":"","usage":' + usage + "}"), DONE]
    output = run_reframer(lambda: Reframer(request_id="r", model="m", max_padding=0, max_tokens=8), frames)
    assert outcome(output) == ("Cut", "done", reason, 0)
    # The model's own reason stands: it said why it ended.
    said = [frame('{"response":"Cut","finish_reason":"stop","usage":' + usage + "}"), DONE]
    assert outcome(run_reframer(lambda: Reframer(request_id="r", model="m", max_padding=0, max_tokens=8), said))[2] == "stop"


def test_text_held_for_a_stop_sequence_is_kept_before_an_error() -> None:
    for how, chunks in text_and_bytes("".join([content('"a ST"'), VLLM_ERROR, DONE])):
        output = run_reframer(lambda: Reframer(request_id="r", model="m", max_padding=0, stop=["STOP"]), chunks)
        assert outcome(output) == ("a ST", "error", "generation_failed", None), how
    cut = run_reframer(lambda: Reframer(request_id="r", model="m", max_padding=0, stop=["STOP"]), [content('"a ST"')])
    assert outcome(cut) == ("a ST", "error", "upstream_incomplete", None)


def test_native_text_after_an_open_tool_call_ends_the_call_however_it_arrives() -> None:
    # Found by the fuzz profile: a block of plain native frames took the copy-through path,
    # which never told the open call it had ended.
    call = frame('{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function",'
                 '"function":{"name":"f","arguments":"{}"}}]}}]}')
    # Without [DONE] the end of the stream completes nothing: only the text can end the call.
    for how, chunks in [("apart", [call, frame('{"response":"0"}')]), *text_and_bytes(call + frame('{"response":"0"}'))]:
        events = protocol_events(run_reframer(make, chunks))
        # The call is whole before the text that ended it (issue 42: Anthropic's blocks come one
        # at a time; until then the call's end came after that text's first delta).
        assert [kind for kind, _ in events] == ["meta", "tool_call_start", "tool_call_delta", "tool_call", "delta", "error"], how
        assert events[4][1]["text"] == "0", how

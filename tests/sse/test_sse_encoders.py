"""The protocol encoders (SSE and NDJSON)."""

from __future__ import annotations

import json

import pytest

from sse import ERROR_MESSAGES, Encoder, NDJSONEncoder, SSEEncoder
from tests.sse.support import parse_chunks, stats

USAGE = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}


def sse_frame(text: str) -> tuple[str, dict[str, object]]:
    [event] = parse_chunks([text.encode()]).events
    return event.type, json.loads(event.data)


def test_sse_encoder_writes_each_protocol_event() -> None:
    encoder = SSEEncoder()
    assert encoder.content_type == "text/event-stream; charset=utf-8"
    assert sse_frame(encoder.meta(request_id="r", model="m")) == (
        "meta",
        {"request_id": "r", "model": "m"},
    )
    assert sse_frame(encoder.delta('a\nb"', "xy")) == ("delta", {"text": 'a\nb"', "p": "xy"})
    assert sse_frame(encoder.reasoning("why", "")) == ("reasoning", {"text": "why", "p": ""})
    assert sse_frame(
        encoder.done(stats(finish_reason="stop", usage=USAGE, deltas=2, chars=5, skipped=1))
    ) == (
        "done",
        {"finish_reason": "stop", "usage": USAGE, "chunks": 2, "chars": 5, "skipped": 1},
    )
    assert sse_frame(encoder.error(code="upstream_timeout", message="m", request_id="r")) == (
        "error",
        {"code": "upstream_timeout", "message": "m", "request_id": "r"},
    )
    assert encoder.ping() == ": ping\n\n"


def test_sse_frames_are_compact_and_keep_non_ascii_text_unescaped() -> None:
    assert (
        SSEEncoder().delta("caf\u00e9 \u6771", "")
        == 'event: delta\ndata: {"text":"caf\u00e9 \u6771","p":""}\n\n'
    )


def test_ndjson_encoder_writes_one_typed_object_a_line() -> None:
    encoder = NDJSONEncoder()
    assert encoder.content_type == "application/x-ndjson"
    lines = [
        encoder.meta(request_id="r", model="m"),
        encoder.delta("a\nb\u2028", "xy"),
        encoder.reasoning("why", ""),
        encoder.ping(),
        encoder.done(stats()),
        encoder.error(code="internal_error", message="m", request_id="r"),
    ]
    for line in lines:
        assert line.endswith("\n") and line.count("\n") == 1
    assert [json.loads(line) for line in lines] == [
        {"type": "meta", "request_id": "r", "model": "m"},
        {"type": "delta", "text": "a\nb\u2028", "p": "xy"},
        {"type": "reasoning", "text": "why", "p": ""},
        {"type": "ping"},
        {
            "type": "done",
            "finish_reason": None,
            "usage": None,
            "chunks": 0,
            "chars": 0,
            "skipped": 0,
        },
        {"type": "error", "code": "internal_error", "message": "m", "request_id": "r"},
    ]


@pytest.mark.parametrize("encoder", [SSEEncoder(), NDJSONEncoder()], ids=["sse", "ndjson"])
def test_json_deltas_equals_one_delta_per_decoded_body(encoder: Encoder) -> None:
    bodies = ["a", "b\\n\\u00e9", "\\ud83d\\ude42"]
    paddings = iter(["x", "", "yz", "unused"])
    expected = (
        encoder.delta("a", "x") + encoder.delta("b\n\u00e9", "") + encoder.delta("\U0001f642", "yz")
    )
    produced = encoder.json_deltas(bodies, paddings)
    assert produced != expected  # the bodies are copied through still escaped...
    if isinstance(encoder, SSEEncoder):
        decoded = [sse_frame(frame + "\n\n") for frame in produced.split("\n\n")[:-1]]
        wanted = [sse_frame(frame + "\n\n") for frame in expected.split("\n\n")[:-1]]
    else:
        decoded = [json.loads(line) for line in produced.split("\n")[:-1]]
        wanted = [json.loads(line) for line in expected.split("\n")[:-1]]
    assert decoded == wanted  # ...but mean the same
    assert next(paddings) == "unused"  # exactly one padding taken per body


def test_the_default_json_deltas_of_a_new_encoding_goes_through_delta() -> None:
    class Upper(SSEEncoder):
        def delta(self, text: str, padding: str) -> str:
            return text.upper() + "|"

    assert Encoder.json_deltas(Upper(), ["a\\u00e9", "b"], iter(["", ""])) == "A\u00c9|B|"


def test_every_error_code_has_a_generic_message() -> None:
    assert set(ERROR_MESSAGES) == {
        "generation_failed",
        "model_unavailable",
        "upstream_timeout",
        "upstream_incomplete",
        "upstream_malformed",
        "tool_calls_too_large",
        "output_not_json",
        "output_schema_mismatch",
        "output_too_large",
        "client_timeout",
        "internal_error",
        "stopped",
        "abandoned",
        "interrupted",
        "expired",
        "cancelled",
        "deleted",
        "background_time_limit",
    }
    for message in ERROR_MESSAGES.values():
        assert message.endswith(".") and "Traceback" not in message

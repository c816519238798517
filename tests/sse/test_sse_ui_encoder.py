"""The Vercel AI SDK UI message stream encoder: parts open once, close before the end."""

from __future__ import annotations

import json
import random

from sse import Reframer, UIMessageStreamEncoder
from tests.sse.support import sent, stats


def chunks_of(text: str) -> list[object]:
    frames = [block for block in text.split("\n\n") if block]
    out: list[object] = []
    for block in frames:
        if block.startswith(":"):
            out.append("ping")
            continue
        assert block.startswith("data: ")
        data = block[len("data: "):]
        out.append(data if data == "[DONE]" else json.loads(data))
    return out


def reframe(upstream: str, finish: bool = True) -> list[object]:
    reframer = Reframer(request_id="r1", model="m", encoder=UIMessageStreamEncoder(), rng=random.Random(1))
    text = reframer.start() + reframer.feed(upstream) + (reframer.finish() if finish else reframer.fail("generation_failed"))
    sent(text)
    return chunks_of(text)


def test_text_is_one_part_between_start_and_finish_then_done():
    chunks = reframe('data: {"response":"Hel"}\n\ndata: {"response":"lo"}\n\ndata: [DONE]\n\n')
    types = [c["type"] if isinstance(c, dict) else c for c in chunks]
    assert types == ["start", "start-step", "text-start", "text-delta", "text-delta", "text-end", "finish-step", "finish", "[DONE]"]
    assert chunks[0]["messageId"] == "r1"
    ids = {c["id"] for c in chunks if isinstance(c, dict) and "id" in c}
    assert len(ids) == 1
    assert "".join(c["delta"] for c in chunks if isinstance(c, dict) and c["type"] == "text-delta") == "Hello"


def test_reasoning_and_text_are_separate_parts_in_order():
    upstream = (
        'data: {"choices":[{"delta":{"reasoning_content":"think"}}]}\n\n'
        'data: {"choices":[{"delta":{"content":"answer"},"finish_reason":"stop"}]}\n\n'
        "data: [DONE]\n\n"
    )
    chunks = [c for c in reframe(upstream) if isinstance(c, dict)]
    types = [c["type"] for c in chunks]
    assert types == ["start", "start-step", "reasoning-start", "reasoning-delta", "reasoning-end", "text-start", "text-delta", "text-end",
                     "finish-step", "finish"]
    assert chunks[2]["id"] != chunks[5]["id"]
    assert chunks[-1]["finishReason"] == "stop"


def test_failure_closes_the_open_part_and_sends_a_generic_error_without_finish():
    chunks = reframe('data: {"response":"partial"}\n\n', finish=False)
    types = [c["type"] if isinstance(c, dict) else c for c in chunks]
    assert types == ["start", "start-step", "text-start", "text-delta", "text-end", "error", "[DONE]"]
    assert "generation_failed" in chunks[5]["errorText"]


def test_unknown_finish_reasons_become_other_and_missing_ones_are_left_out():
    encoder = UIMessageStreamEncoder()
    encoder.meta(request_id="r", model="m")
    finished = chunks_of(encoder.done(stats(finish_reason="eos_token")))
    assert finished[:2] == [{"type": "finish-step"}, {"type": "finish", "finishReason": "other"}]
    silent = chunks_of(UIMessageStreamEncoder().done(stats(usage={"total_tokens": 3})))
    assert silent[1] == {"type": "finish", "messageMetadata": {"usage": {"total_tokens": 3}}}
    assert UIMessageStreamEncoder().ping() == ": ping\n\n"


def test_the_stream_is_sent_with_the_protocol_header_and_the_stream_headers():
    headers = UIMessageStreamEncoder().headers
    assert headers["x-vercel-ai-ui-message-stream"] == "v1" and headers["x-accel-buffering"] == "no"

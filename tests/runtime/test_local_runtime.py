"""The local runtime: real workerd runs the Python Worker offline, fed by the AI emulator."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from tests.harness.output import RAW_UPSTREAM_LOST
from tests.harness.runtime import RuntimeOptions
from tests.harness.scenarios import done_frame, echo, error, hang, repeat, scripted_options, send, send_bytes, sleep

MESSAGES = [{"role": "user", "content": "How do streams work?"}]


async def read_chunks(http: httpx.AsyncClient, url: str, messages=MESSAGES) -> list[tuple[float, bytes]]:
    """POST to the raw route and return (arrival time, bytes) for every network chunk."""
    chunks = []
    async with http.stream("POST", url + "/api/chat/raw", json={"messages": messages}) as response:
        assert response.status_code == 200
        async for chunk in response.aiter_raw():
            chunks.append((time.monotonic(), chunk))
    return chunks


def sse_payloads(body: bytes) -> list[str]:
    return [line[len("data: "):] for line in body.decode("utf-8").split("\n") if line.startswith("data: ")]


async def test_health_answers_ok(start_runtime, http):
    runtime = start_runtime()
    response = await http.get(runtime.url + "/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_chunks_arrive_at_the_emulators_pace_not_all_at_once(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=40))
    chunks = await read_chunks(http, runtime.url)
    payloads = sse_payloads(b"".join(c for _, c in chunks))
    tokens = len(payloads) - 2  # the usage frame and [DONE] follow the tokens
    elapsed = chunks[-1][0] - chunks[0][0]
    expected = tokens / 40
    assert 60 <= tokens <= 300
    # The pace is a floor (the emulator sleeps between tokens); a busy machine only adds to
    # it, and makes a late reader take several chunks at once. So: the answer took at least
    # most of its paced time, not many times it, and half of it had not come by a third of
    # that time (all at once, half would be there at once). A loaded run failed the former
    # check, most gaps over 10 ms, with 77 of 99.
    assert 0.7 * expected <= elapsed <= 3 * expected, (tokens, elapsed)
    halfway = chunks[len(chunks) // 2][0] - chunks[0][0]
    assert halfway >= 0.3 * expected, (halfway, expected)


async def test_reply_is_framed_like_workers_ai_and_split_at_arbitrary_points(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0, ai_frames_per_chunk=1))
    chunks = [c for _, c in await read_chunks(http, runtime.url)]
    payloads = sse_payloads(b"".join(chunks))
    assert payloads[-1] == "[DONE]"
    frames = [json.loads(p) for p in payloads[:-1]]
    assert all(isinstance(f["response"], str) and isinstance(f["p"], str) for f in frames[:-1])
    assert frames[-1]["response"] == ""
    usage = frames[-1]["usage"]
    assert usage["completion_tokens"] == len(frames) - 1
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert any(not c.endswith(b"\n\n") for c in chunks[:-1]), "chunks should not line up with frames"
    split_characters = 0
    for chunk in chunks:
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError:
            split_characters += 1
    assert split_characters > 0, "some chunk boundary should fall inside a multi-byte character"


async def test_same_conversation_gives_the_same_reply_and_another_gives_another(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))

    async def reply(messages) -> str:
        body = b"".join(c for _, c in await read_chunks(http, runtime.url, messages))
        return "".join(json.loads(p)["response"] for p in sse_payloads(body)[:-1])

    first = await reply(MESSAGES)
    assert first == await reply(MESSAGES)
    assert first != await reply([{"role": "user", "content": "Something else entirely"}])


async def test_openai_format_streams_chat_completion_chunks(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0, ai_format="openai"))
    payloads = sse_payloads(b"".join(c for _, c in await read_chunks(http, runtime.url)))
    assert payloads[-1] == "[DONE]"
    frames = [json.loads(p) for p in payloads[:-1]]
    assert all(f["object"] == "chat.completion.chunk" for f in frames)
    assert frames[-1]["choices"] == [] and frames[-1]["usage"]["completion_tokens"] > 0
    assert frames[-2]["choices"][0]["finish_reason"] == "stop"
    text = "".join(f["choices"][0]["delta"].get("content", "") for f in frames[:-1])
    assert len(text) > 0


async def test_scripted_steps_are_replayed_in_order(start_runtime, http):
    steps = [
        send('data: {"response": "caf'),
        send_bytes('é"}\n\n'.encode()),
        sleep(300),
        echo(),
        repeat(3, 'data: {"response": "x"}\n\n'),
        done_frame(),
    ]
    runtime = start_runtime(scripted_options(steps))
    chunks = await read_chunks(http, runtime.url, [{"role": "user", "content": "echo me ✓"}])
    payloads = sse_payloads(b"".join(c for _, c in chunks))
    assert payloads == [
        '{"response": "café"}',
        json.dumps({"response": "echo me ✓", "p": ""}, separators=(",", ":"), ensure_ascii=False),
        '{"response": "x"}', '{"response": "x"}', '{"response": "x"}',
        "[DONE]",
    ]
    assert chunks[0][1] == b'data: {"response": "caf'
    sleep_gap = max(later - earlier for (earlier, _), (later, _) in zip(chunks, chunks[1:], strict=False))
    assert sleep_gap >= 0.25


@pytest.mark.expected_errors(RAW_UPSTREAM_LOST)
async def test_scripted_error_step_errors_the_upstream_stream(start_runtime, http):
    runtime = start_runtime(scripted_options([send('data: {"response": "a"}\n\n'), sleep(200), error("boom")]))
    mark = len(runtime.lines)
    received = b""
    try:
        async with http.stream("POST", runtime.url + "/api/chat/raw", json={"messages": MESSAGES}) as response:
            async for chunk in response.aiter_raw():
                received += chunk
    except httpx.HTTPError:
        pass  # a torn connection; through wrangler's proxy the body may also just end
    # Either way a pass-through client cannot tell this from a finished answer except by
    # the missing [DONE]: the reason /api/chat appends its own terminal event.
    assert received == b'data: {"response": "a"}\n\n'
    runtime.wait_for_record("ai_upstream_errored", since=mark)


async def test_scripted_fail_start_rejects_the_run_call(start_runtime, http):
    runtime = start_runtime(scripted_options(fail_start="3040: Capacity temporarily exceeded"))
    mark = len(runtime.lines)
    response = await http.post(runtime.url + "/api/chat/raw", json={"messages": MESSAGES})
    assert response.status_code == 429  # the Worker reads the binding's code: rate limited
    runtime.wait_for_record("ai_start_failed", since=mark)
    assert (await http.get(runtime.url + "/health")).status_code == 200


async def test_client_disconnect_cancels_the_emulators_stream(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=40))
    mark = len(runtime.lines)
    async with http.stream("POST", runtime.url + "/api/chat/raw", json={"messages": MESSAGES}) as response:
        async for _ in response.aiter_raw():
            break  # leave after the first chunk
    cancelled = runtime.wait_for_record("ai_upstream_cancelled", since=mark)
    assert cancelled["pulls"] < 30
    assert not any(r["event"] == "ai_upstream_finished" for r in runtime.records(mark))
    assert runtime.hung_reports() == []


async def test_scripted_hang_keeps_the_stream_open_and_sends_nothing_more(start_runtime, http):
    runtime = start_runtime(scripted_options([send('data: {"response": "a"}\n\n'), hang()]))
    async with http.stream("POST", runtime.url + "/api/chat/raw", json={"messages": MESSAGES}) as response:
        stream = response.aiter_raw()
        assert (await stream.__anext__()).startswith(b"data: ")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(stream.__anext__(), timeout=1.5)
    # A pass-through body notices a departed client only when it next writes, so a silent
    # upstream is not cancelled here; the chat route's idle timeout handles that case.
    assert (await http.get(runtime.url + "/health")).status_code == 200
    assert runtime.hung_reports() == []

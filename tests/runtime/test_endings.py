"""How streams end, and whom a timeout blames, in the real runtime: `done` at the model's
`[DONE]` whatever follows it, an idle timer that only model output resets, and a slow
reader that is never mistaken for a silent model."""

from __future__ import annotations

import asyncio
import json
import time

import httpx

from tests.harness.client import chat
from tests.harness.runtime import RuntimeOptions
from tests.harness.scenarios import done_frame, error, hang, native_frame, repeat, script, scripted_options, send, sleep

IDLE_TIMEOUT_S = 1.5
CLIENT_TIMEOUT_S = 6.0
BIG_TEXT = "x" * 8000
BIG_FRAMES = 4000  # 32 MB of model text: more than every buffer between the Worker and the reader holds
BIG_FRAME = 'data: {"response":"' + BIG_TEXT + '"}\n\n'
KEEP_ALIVES = [send(": keep-alive\n"), sleep(100)] * 100
BLANK_LINES = [send("\n"), sleep(100)] * 100

SCRIPTS = {
    "done then hang": [native_frame("complete"), done_frame(), hang()],
    "done then error": [native_frame("complete"), done_frame(), sleep(50), error("provider says no after the end")],
    "done then comments": [native_frame("complete"), done_frame(), *KEEP_ALIVES],
    "only comments": [native_frame("a"), *KEEP_ALIVES],
    "only blank lines": [native_frame("a"), *BLANK_LINES],
    "a lot, fast": [repeat(BIG_FRAMES, BIG_FRAME), done_frame()],
    "endless": [repeat(100_000, BIG_FRAME), done_frame()],
}
ENDINGS = scripted_options(
    prompts={prompt: script(steps) for prompt, steps in SCRIPTS.items()},
    variables={"CLIENT_TIMEOUT_MS": "6000", "IDLE_TIMEOUT_MS": "1500", "PING_INTERVAL_MS": "300"},
)


def ask(prompt: str) -> dict:
    return {"messages": [{"role": "user", "content": prompt}]}


async def test_done_comes_at_once_after_done_and_the_upstream_is_cancelled_whatever_follows(start_runtime, http):
    runtime = start_runtime(ENDINGS)
    for prompt in ("done then hang", "done then error", "done then comments"):
        mark = len(runtime.lines)
        began = time.monotonic()
        result = await chat(http, runtime.url, ask(prompt))
        assert result.text == "complete", prompt
        assert result.terminal.name == "done" and result.names.count("done") == 1, prompt
        assert "error" not in result.names, prompt
        assert time.monotonic() - began < IDLE_TIMEOUT_S, f"{prompt}: done waited for the upstream to close"
        completed = runtime.wait_for_record("chat_stream_completed", since=mark, request_id=result.headers["x-request-id"])
        assert "code" not in completed
        if prompt != "done then error":
            # (The emulator serves error scripts as a native stream, which reports the
            # cancel as its pending error instead.)
            runtime.wait_for_record("ai_upstream_cancelled", since=mark)


async def test_keep_alives_from_the_model_do_not_reset_the_idle_timer(start_runtime, http):
    runtime = start_runtime(ENDINGS)
    for prompt in ("only comments", "only blank lines"):
        mark = len(runtime.lines)
        began = time.monotonic()
        result = await chat(http, runtime.url, ask(prompt))
        assert result.text == "a"
        assert result.terminal.name == "error" and result.terminal.data["code"] == "upstream_timeout", prompt
        # The script keeps sending keep-alives for ten seconds; the timeout comes first.
        assert time.monotonic() - began < 3 * IDLE_TIMEOUT_S + 2, prompt
        runtime.wait_for_record("chat_stream_failed", since=mark, code="upstream_timeout")
        runtime.wait_for_record("ai_upstream_cancelled", since=mark)


async def test_a_reader_that_pauses_longer_than_the_idle_timeout_still_gets_the_whole_answer(start_runtime):
    runtime = start_runtime(ENDINGS)
    mark = len(runtime.lines)
    received = bytearray()
    async with httpx.AsyncClient(timeout=60) as client:
        async with client.stream("POST", runtime.url + "/api/chat", json=ask("a lot, fast")) as response:
            chunks = response.aiter_raw()
            received += await anext(chunks)
            # Stop reading: buffers fill, backpressure holds the upstream back. That wait
            # is the reader's, not the model's.
            await asyncio.sleep(2 * IDLE_TIMEOUT_S + 0.5)  # under the client timeout
            async for chunk in chunks:
                received += chunk
    body = received.decode()
    last_event = body.rstrip("\n").rsplit("\n\n", 1)[-1]
    assert last_event.startswith("event: done\n"), body[-300:]
    assert body.count("event: done\n") == 1 and "event: error\n" not in body
    assert body.count(BIG_TEXT) == BIG_FRAMES
    runtime.wait_for_record("chat_stream_completed", since=mark, request_id=response.headers["x-request-id"])


async def test_a_reader_that_never_reads_again_is_dropped_after_the_client_timeout(start_runtime):
    runtime = start_runtime(ENDINGS)
    mark = len(runtime.lines)
    async with httpx.AsyncClient(timeout=60) as client:
        async with client.stream("POST", runtime.url + "/api/chat", json=ask("endless")) as response:
            chunks = response.aiter_raw()  # kept: a collected iterator would close the response
            await anext(chunks)
            request_id = response.headers["x-request-id"]
            failed = await asyncio.to_thread(
                runtime.wait_for_record, "chat_stream_failed", mark, CLIENT_TIMEOUT_S + 10, request_id=request_id
            )
    assert failed["code"] == "client_timeout"
    cancelled = runtime.wait_for_record("ai_upstream_cancelled", since=mark)
    assert cancelled["pulls"] < 100_000, "the generation stopped, it did not run to the end"
    assert not any(r["event"] == "ai_upstream_finished" for r in runtime.records(mark))


LATE, FALLBACK = "@cf/zai-org/glm-4.7-flash", "@cf/google/gemma-4-26b-a4b-it"
FALLBACK_WORDS = [f"w{i} " for i in range(40)]


async def test_a_model_that_starts_after_the_start_timeout_is_cancelled_when_it_arrives(start_runtime, http):
    # The fallback answers for 3 s, so the late stream (at 1.5 s) arrives while the request
    # is in flight: only then does a cancel reach the emulator locally (docs/limits.md).
    late = [step for i in range(200) for step in (native_frame(f"t{i} "), sleep(20))] + [done_frame()]
    answer = [step for word in FALLBACK_WORDS for step in (native_frame(word), sleep(75))] + [done_frame()]
    runtime = start_runtime(scripted_options(
        models={LATE: script(late, start_delay_ms=1500), FALLBACK: script(answer)},
        variables={"MODEL": LATE, "FALLBACK_MODELS": FALLBACK, "START_TIMEOUT_MS": "500"},
    ))
    mark = len(runtime.lines)
    result = await chat(http, runtime.url, ask("late"))
    assert result.terminal.name == "done" and result.text == "".join(FALLBACK_WORDS)
    runtime.wait_for_record("chat_late_stream_cancel_requested", since=mark, request_id=result.headers["x-request-id"], model=LATE)
    # Only a cancel makes the emulator print this. (Crossing RPC pulls a chunk ahead.)
    cancelled = runtime.wait_for_record("ai_upstream_cancelled", since=mark, model=LATE)
    assert cancelled["pulls"] <= 2, "the late stream was read, not cancelled"


async def test_a_late_stream_after_a_504_is_still_asked_to_cancel(start_runtime, http):
    late = [native_frame("late"), done_frame()]
    runtime = start_runtime(scripted_options(late, start_delay_ms=1500, variables={"START_TIMEOUT_MS": "500"}))
    mark = len(runtime.lines)
    response = await http.post(runtime.url + "/api/chat", json=ask("late"))
    assert response.status_code == 504 and response.json()["error"]["code"] == "upstream_timeout"
    # Whether the cancel reaches the emulator once the response has ended varies (docs/limits.md); the Worker asks for it either way.
    runtime.wait_for_record("chat_late_stream_cancel_requested", since=mark, request_id=response.headers["x-request-id"])


async def test_a_model_that_fails_after_the_start_timeout_prints_no_provider_text(start_runtime, http):
    # workerd alone: under wrangler dev, wrangler itself prints what the emulator throws.
    late_failure = script([], fail_start="3040: late provider text", start_delay_ms=1500)
    runtime = start_runtime(RuntimeOptions(ai_script=json.dumps(late_failure), workerd_direct=True,
                                           variables=(("START_TIMEOUT_MS", "500"),)))
    mark = len(runtime.lines)
    response = await http.post(runtime.url + "/api/chat", json=ask("late failure"))
    assert response.status_code == 504
    runtime.wait_for_record("ai_start_failed", since=mark)
    await asyncio.sleep(1)  # a late failure would be printed after the response
    assert not any("late provider text" in line for line in runtime.own_lines(mark))

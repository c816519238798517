"""Resumable answers in the real runtime: a Python Durable Object makes the answer, stores
its events, and any reader picks it up from any Last-Event-ID (docs/protocol.md)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from dataclasses import replace

import httpx
import pytest

from tests.harness.client import USER, ChatResult, chat, parse_sse
from tests.harness.runtime import ROOT, LocalRuntime, RuntimeOptions
from tests.harness.scenarios import done_frame, error, hang, native_frame, script, scripted_options, sleep

RESUMABLE = {"messages": USER, "resumable": True}
# Paced so a test can leave, come back and stop an answer while it is being written.
PACED = RuntimeOptions(ai_pace=60, ai_reply_tokens=60)


def stream_path(result: ChatResult) -> str:
    meta = result.events[0]
    assert meta.name == "meta" and meta.id == "1", result.names[:3]
    return f"/api/chat/streams/{meta.data['stream_id']}"


async def resume(http: httpx.AsyncClient, runtime: LocalRuntime, path: str, last_id: str | None = None, **kwargs) -> ChatResult:
    headers = kwargs.pop("headers", {})
    if last_id is not None:
        headers["last-event-id"] = last_id
    return await chat(http, runtime.url, path=path, method="GET", headers=headers, **kwargs)


def ids(result: ChatResult) -> list[int]:
    return [int(event.id) for event in result.events if event.id is not None]


def ai_runs(runtime: LocalRuntime, since: int) -> int:
    return sum(record["event"] == "ai_run" for record in runtime.records(since))


@pytest.mark.smoke
async def test_an_uninterrupted_resumable_answer_is_the_plain_answer_with_ids(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    plain = await chat(http, runtime.url)
    resumable = await chat(http, runtime.url, RESUMABLE)
    assert resumable.status == 200 and resumable.headers["content-type"].startswith("text/event-stream")
    assert resumable.text == plain.text
    assert resumable.names == plain.names
    assert ids(resumable) == list(range(1, len(resumable.events) + 1)), "every event has an id, in order"
    meta = resumable.events[0].data
    assert meta["request_id"] == resumable.headers["x-request-id"] and len(meta["stream_id"]) == 64


@pytest.mark.parametrize("leave_after", [1, 20, "last"], ids=["first", "middle", "last"])
async def test_a_reader_that_drops_resumes_after_its_last_event_and_misses_nothing(start_runtime, http, leave_after):
    runtime = start_runtime(PACED)
    plain = await chat(http, runtime.url)
    mark = len(runtime.lines)
    first = await chat(http, runtime.url, RESUMABLE, leave_after_events=None if leave_after == "last" else leave_after)
    if leave_after == "last":
        first.events.pop()  # as if the connection dropped just before the terminal event arrived
    rest = await resume(http, runtime, stream_path(first), first.events[-1].id)
    joined = first.events + rest.events
    assert "".join(e.data["text"] for e in joined if e.name == "delta") == plain.text
    assert [int(e.id) for e in joined] == list(range(1, len(joined) + 1)), "no id twice, none missing"
    assert [e.name for e in joined if e.name in ("done", "error")] == ["done"] and joined[-1].name == "done"
    runtime.wait_for_record("chat_stream_completed", since=mark)
    assert ai_runs(runtime, mark) == 1, "resuming never starts a second generation"


async def test_a_finished_answer_is_replayed_whole_and_two_readers_see_the_same_events(start_runtime, http):
    runtime = start_runtime(PACED)
    mark = len(runtime.lines)
    first = await chat(http, runtime.url, RESUMABLE, leave_after_events=3)
    path = stream_path(first)
    second, third = await asyncio.gather(resume(http, runtime, path), resume(http, runtime, path))
    assert [(e.id, e.name, e.data) for e in second.events] == [(e.id, e.name, e.data) for e in third.events]
    assert second.terminal.name == "done" and ids(second)[0] == 1
    replay = await resume(http, runtime, path, "")  # after the end, from the start (empty id: none)
    assert [(e.id, e.data) for e in replay.events] == [(e.id, e.data) for e in second.events]
    assert ai_runs(runtime, mark) == 1


async def test_ndjson_readers_get_the_same_events_with_ids(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    sse = await chat(http, runtime.url, RESUMABLE)
    ndjson = await resume(http, runtime, stream_path(sse), "2", headers={"accept": "application/x-ndjson"})
    assert ndjson.headers["content-type"] == "application/x-ndjson"
    assert [(e.id, e.name, e.data) for e in ndjson.events] == [(e.id, e.name, e.data) for e in sse.events[2:]]


async def test_delete_stops_the_generation_and_every_reader_gets_one_stopped_event(start_runtime, http):
    runtime = start_runtime(PACED)
    mark = len(runtime.lines)
    first = await chat(http, runtime.url, RESUMABLE, leave_after_events=2)
    path = stream_path(first)
    other = ChatResult(status=0, headers=httpx.Headers())
    async with http.stream("GET", runtime.url + path) as reading:
        chunks = reading.aiter_text()
        buffer = await anext(chunks)  # this reader is attached: it has the answer's first events
        stopped = await http.delete(runtime.url + path)
        assert stopped.status_code == 204
        async for chunk in chunks:
            buffer += chunk
    parse_sse(buffer, other, 0.0)
    assert other.terminal.name == "error" and other.terminal.data["code"] == "stopped"
    assert [e.name for e in other.events].count("error") == 1 and "done" not in other.names
    runtime.wait_for_record("ai_upstream_cancelled", since=mark)
    assert not any(r["event"] == "ai_upstream_finished" for r in runtime.records(mark))
    again = await resume(http, runtime, path)
    assert again.terminal.data["code"] == "stopped" and ids(again) == list(range(1, len(again.events) + 1))
    assert (await http.delete(runtime.url + path)).status_code == 204, "stopping a stopped answer changes nothing"


async def test_an_answer_nobody_reads_is_stopped_after_the_grace_period(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=20, ai_reply_tokens=400, variables=(("RESUME_GRACE_MS", "1000"),)))
    mark = len(runtime.lines)
    first = await chat(http, runtime.url, RESUMABLE, leave_after_events=2)
    runtime.wait_for_record("chat_resumable_abandoned", since=mark, timeout=10)
    cancelled = runtime.wait_for_record("ai_upstream_cancelled", since=mark)
    assert cancelled["pulls"] < 100, "the generation stopped about a second after the reader left"
    later = await resume(http, runtime, stream_path(first))
    assert later.terminal.name == "error" and later.terminal.data["code"] == "abandoned"


async def test_a_reader_that_comes_back_within_the_grace_period_keeps_the_answer_going(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=40, ai_reply_tokens=80, variables=(("RESUME_GRACE_MS", "1500"),)))
    first = await chat(http, runtime.url, RESUMABLE, leave_after_events=2)
    await asyncio.sleep(0.8)
    rest = await resume(http, runtime, stream_path(first), first.events[-1].id)
    assert rest.terminal.name == "done"


async def test_a_finished_answer_expires_after_its_ttl(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0, variables=(("RESUME_TTL_S", "1"),)))
    mark = len(runtime.lines)
    result = await chat(http, runtime.url, RESUMABLE)
    path = stream_path(result)
    assert (await resume(http, runtime, path)).terminal.name == "done"
    runtime.wait_for_record("chat_resumable_expired", since=mark, timeout=15)
    gone = await http.get(runtime.url + path)
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "stream_not_found"
    assert (await http.delete(runtime.url + path)).status_code == 404


@pytest.mark.parametrize(
    ("path", "headers", "code"),
    [
        ("/api/chat/streams/not-an-id", {}, "invalid_stream_id"),
        ("/api/chat/streams/" + "a" * 64, {}, "invalid_stream_id"),  # well-formed, not ours
        ("/api/chat/streams/" + "A" * 64, {}, "invalid_stream_id"),
        ("/api/ui-chat/bad%20id/stream", {}, "invalid_stream_id"),
        ("/api/ui-chat/" + "x" * 129 + "/stream", {}, "invalid_stream_id"),
    ],
)
async def test_malformed_ids_are_400(start_runtime, http, path, headers, code):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    response = await http.get(runtime.url + path, headers=headers)
    assert response.status_code == 400 and response.json()["error"]["code"] == code


@pytest.mark.parametrize("last_event_id", ["x", "-1", "1" * 16, "1.5", "1 2", "٣".encode()])
async def test_malformed_last_event_ids_are_400(start_runtime, http, last_event_id):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    result = await chat(http, runtime.url, RESUMABLE)
    response = await http.get(runtime.url + stream_path(result), headers={"last-event-id": last_event_id})
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_last_event_id"


async def test_a_reader_with_the_whole_answer_gets_204_and_an_id_never_sent_is_400(start_runtime, http):
    runtime = start_runtime(PACED)
    live = await chat(http, runtime.url, RESUMABLE, leave_after_events=2)
    path = stream_path(live)
    ahead = await http.get(runtime.url + path, headers={"last-event-id": "999999"})
    assert ahead.status_code == 400 and ahead.json()["error"]["code"] == "invalid_last_event_id"
    whole = await resume(http, runtime, path)  # waits for the end
    last = whole.events[-1].id
    # 204 is what stops a browser's EventSource from reconnecting for ever.
    done = await http.get(runtime.url + path, headers={"last-event-id": last})
    assert done.status_code == 204 and done.content == b""
    # An id the finished answer never sent is refused as on a live one (docs/protocol.md).
    beyond = await http.get(runtime.url + path, headers={"last-event-id": str(int(last) + 5)})
    assert beyond.status_code == 400 and beyond.json()["error"]["code"] == "invalid_last_event_id"
    before_last = await resume(http, runtime, path, str(int(last) - 1))
    assert [e.name for e in before_last.events] == ["done"]


async def test_many_readers_of_one_long_answer_all_get_all_of_it(start_runtime, http):
    # Each reader waiting with a timer of its own once reached workerd's 10,000 active
    # timers and wedged the answer for everyone (about 50 readers of a paced answer).
    runtime = start_runtime(RuntimeOptions(ai_pace=60, ai_reply_tokens=240, variables=(("PING_INTERVAL_MS", "5000"),)))
    first = await chat(http, runtime.url, RESUMABLE, leave_after_events=3)
    path = stream_path(first)
    async with httpx.AsyncClient(timeout=httpx.Timeout(60.0), limits=httpx.Limits(max_connections=80)) as many:
        readers = await asyncio.gather(*(resume(many, runtime, path, str(i % 5)) for i in range(60)))
    for index, reader in enumerate(readers):
        assert reader.terminal.name == "done", index
        assert ids(reader)[0] == index % 5 + 1 and ids(reader) == list(range(index % 5 + 1, ids(reader)[-1] + 1))
    assert not any("QuotaExceeded" in line for line in runtime.lines)


async def test_an_upstream_event_at_the_cap_is_stored_and_replayed_whole(start_runtime, http):
    # Its frame is longer than the upstream's cap allows an event to be; reading our own
    # frames back with the upstream's cap once wedged the answer.
    big = "x" * 262_000
    runtime = start_runtime(scripted_options([native_frame(big), done_frame()], variables={"PADDING": "255"}))
    for _ in range(3):  # the padding is random: several tries cover the longest frames
        result = await chat(http, runtime.url, RESUMABLE)
        assert result.terminal.name == "done" and result.text == big
        replay = await resume(http, runtime, stream_path(result))
        assert replay.text == big and replay.terminal.name == "done"


async def test_two_turns_of_one_ui_chat_at_once_leave_one_answer_and_stop_the_other(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=40, ai_reply_tokens=200))
    mark = len(runtime.lines)
    body = {"id": "race-1", "resumable": True, "messages": [{"role": "user", "parts": [{"type": "text", "text": "Race"}]}]}

    async def turn() -> str:
        response = await http.post(runtime.url + "/api/ui-chat", json=body)
        return response.text

    texts = await asyncio.gather(turn(), turn(), turn())
    finished = [text for text in texts if '"type":"finish"' in text]
    stopped = [text for text in texts if "stopped" in text]
    assert len(finished) == 1 and len(stopped) == 2, [text[-200:] for text in texts]
    assert all(text.endswith("data: [DONE]\n\n") for text in texts)
    assert len(runtime.wait_for_count("chat_stream_completed", 1, since=mark)) == 1
    assert [r["code"] for r in runtime.wait_for_count("chat_stream_failed", 2, since=mark)] == ["stopped", "stopped"]
    # Whether each stop reached the local emulator is not asserted here: with readers
    # attached it sometimes does not (docs/limits.md; issue 20 measures it).


async def test_start_errors_are_still_http_statuses_and_bad_flags_are_400(start_runtime, http):
    runtime = start_runtime(scripted_options([], fail_start="3040: Capacity temporarily exceeded"))
    limited = await http.post(runtime.url + "/api/chat", json=RESUMABLE)
    assert limited.status_code == 429 and limited.json()["error"]["code"] == "model_busy"
    assert "retry-after" in limited.headers
    bad = await http.post(runtime.url + "/api/chat", json={"messages": USER, "resumable": "yes"})
    assert bad.status_code == 400 and "resumable" in bad.json()["error"]["message"]
    raw = await http.post(runtime.url + "/api/chat/raw", json=RESUMABLE)
    assert raw.status_code == 400


async def test_auth_and_cors_cover_the_stream_routes(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0, variables=(("AUTH_TOKEN", "sesame"),)))
    token = {"authorization": "Bearer sesame"}
    result = await chat(http, runtime.url, RESUMABLE, headers=token)
    path = stream_path(result)
    for method in ("GET", "DELETE"):
        denied = await http.request(method, runtime.url + path)
        assert denied.status_code == 401, method
    ui = await http.get(runtime.url + "/api/ui-chat/chat1/stream")
    assert ui.status_code == 401
    origin = {"origin": "https://app.example"}
    preflight = await http.options(runtime.url + path, headers={**origin, "access-control-request-method": "DELETE"})
    assert preflight.status_code == 204
    assert "DELETE" in preflight.headers["access-control-allow-methods"]
    assert "last-event-id" in preflight.headers["access-control-allow-headers"]
    allowed = await resume(http, runtime, path, headers={**token, **origin})
    assert allowed.status == 200 and allowed.headers["access-control-allow-origin"] == "https://app.example"
    assert (await http.post(runtime.url + path, headers=token)).status_code == 405


async def test_a_restart_mid_answer_ends_the_stored_events_with_one_interrupted_error(runtime_pool, http):
    state = tempfile.mkdtemp(prefix="resume-state-", dir=ROOT / ".dev")
    options = RuntimeOptions(ai_pace=30, ai_reply_tokens=300, persist_to=state)
    try:
        before = LocalRuntime(options).start()
        try:
            first = await chat(http, before.url, RESUMABLE, leave_after_events=5)
            # The fifth event is stored before the restart: a reader after event 4 gets it.
            # (Stopping at once lost it under load, issue 28's review.)
            stored = await resume(http, before, stream_path(first), "4", leave_after_events=1)
            assert stored.events and stored.events[0].id == first.events[4].id  # padding differs live
        finally:
            before.stop()
        after = LocalRuntime(options).start()
        try:
            mark = len(after.lines)
            rest = await resume(http, after, stream_path(first))
            # What was kept is what was sent, in order. The last event a reader saw may be
            # missing: CI saw the store keep 4 of the 5 once, under load (the live reader
            # got the fifth before its write reached the disk; see the 2026-12-03 note).
            sent, kept = [e.data for e in first.events], [e.data for e in rest.events if e.name != "error"]
            assert kept and kept[:len(sent)] == sent[:len(kept)]
            assert rest.terminal.name == "error" and rest.terminal.data["code"] == "interrupted"
            assert [e.name for e in rest.events].count("error") == 1
            assert ids(rest) == list(range(1, len(rest.events) + 1))
            after.wait_for_record("chat_resumable_interrupted", since=mark)
            assert not after.crash_lines() and not before.crash_lines()
        finally:
            after.stop()
    finally:
        shutil.rmtree(state, ignore_errors=True)


async def test_after_a_restart_the_live_reader_and_a_reader_resuming_from_each_id_it_had_get_one_terminal_last(runtime_pool, http):
    # The live reader leaves the moment it has the last event sent before the model fell
    # silent, and the runtime stops at once: an event it was handed before storage held it
    # durably would be lost, and the `interrupted` terminal would then take its id (issue 40:
    # a reader resuming from that id got nothing at all). Readers are handed only durable events.
    state = tempfile.mkdtemp(prefix="resume-restart-", dir=ROOT / ".dev")
    pieces = [f" piece {n}" for n in range(40)]
    options = replace(scripted_options([native_frame(piece) for piece in pieces] + [hang()]), persist_to=state)
    try:
        before = LocalRuntime(options).start()
        try:
            live = await chat(http, before.url, RESUMABLE, leave_after_events=1 + len(pieces))
        finally:
            before.stop()
        had = ids(live)
        assert had == list(range(1, len(pieces) + 2)) and live.text == "".join(pieces)
        after = LocalRuntime(options).start()
        try:
            for last_id in [None, *map(str, had)]:
                rest = await resume(http, after, stream_path(live), last_id)
                assert rest.status == 200, (last_id, rest.status)
                names = [event.name for event in rest.events]
                assert names.count("error") == 1 and names[-1] == "error" and rest.terminal.data["code"] == "interrupted", (last_id, names)
                assert int(rest.terminal.id) > had[-1], "the terminal's id is past every id a reader was given"
                start = 0 if last_id is None else int(last_id)
                kept = [event for event in rest.events if event.name == "delta"]
                assert [e.data["text"] for e in kept] == [e.data["text"] for e in live.events[start:] if e.name == "delta"], last_id
            assert not after.crash_lines() and not before.crash_lines()
        finally:
            after.stop()
    finally:
        shutil.rmtree(state, ignore_errors=True)


async def test_a_resumable_answer_keeps_the_plain_guarantees_for_a_failing_upstream(start_runtime, http):
    runtime = start_runtime(scripted_options([native_frame("Hel"), sleep(300), native_frame("lo"), error("provider secret 17")],
                                             variables={"PING_INTERVAL_MS": "100"}))
    mark = len(runtime.lines)
    first = await chat(http, runtime.url, RESUMABLE)
    assert first.text == "Hello" and first.terminal.data["code"] == "generation_failed"
    assert "ping" in first.comments, "readers get pings while the model is silent"
    again = await resume(http, runtime, stream_path(first), "1")
    assert [e.name for e in again.events] == ["delta", "delta", "error"] and again.terminal.data["code"] == "generation_failed"
    assert not any("provider secret" in line or "Hello" in line for line in runtime.own_lines(mark)), "no content in logs"


async def test_a_silent_upstream_times_out_in_a_resumable_answer_too(start_runtime, http):
    runtime = start_runtime(scripted_options([native_frame("Hi"), hang()], variables={"IDLE_TIMEOUT_MS": "600"}))
    mark = len(runtime.lines)
    result = await chat(http, runtime.url, RESUMABLE)
    assert result.text == "Hi" and result.terminal.data["code"] == "upstream_timeout"
    runtime.wait_for_record("ai_upstream_cancelled", since=mark)


async def test_fallbacks_apply_to_resumable_answers(start_runtime, http):
    runtime = start_runtime(scripted_options(
        models={"@cf/zai-org/glm-4.7-flash": script(fail_start="3040: busy"), "@cf/google/gemma-4-26b-a4b-it": script([native_frame("from second"), done_frame()])},
        variables={"MODEL": "@cf/zai-org/glm-4.7-flash", "FALLBACK_MODELS": "@cf/google/gemma-4-26b-a4b-it"},
    ))
    result = await chat(http, runtime.url, RESUMABLE)
    assert result.events[0].data["model"] == "@cf/google/gemma-4-26b-a4b-it" and result.text == "from second" and result.terminal.name == "done"

"""Stored and background responses of /v1/responses, read by the official `openai` Python
package through the real runtime: `store: true` kept and read back, `background: true`
run with nobody reading, its stream resumed from any sequence number, cancelled and
deleted with readers attached, and `previous_response_id` over three turns. Every reader
ends with exactly one terminal event.

Answers that must still be running when the test acts are `held` until the test releases
them (tests/harness/scenarios.py), so no test depends on the machine's speed."""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
import tempfile
from dataclasses import replace
from typing import Any

import httpx
import openai
import pytest

from tests.harness.runtime import ROOT, LocalRuntime
from tests.harness.scenarios import (
    done_frame,
    echo,
    error,
    held,
    native_frame,
    repeat,
    script,
    scripted_options,
    sleep,
    transcript,
    usage_frame,
)
from tests.image_files import data_url, png
from tests.openai_api.test_openai_sdk import MODEL, sdk
from tests.openai_api.test_responses_sdk import assert_well_ordered

HELD_BACKGROUND = "stored-background-held"  # released by the test that holds it, never by another
SLOW = "a slow answer"
GRACE_MS = 400  # RESUME_GRACE_MS here: a background answer lasts longer than this, unread

SCRIPTS = scripted_options(
    [echo(), usage_frame(3, 1), done_frame()],
    prompts={
        "remember": script([transcript(), usage_frame(5, 2), done_frame()]),
        # Unread for 3 × GRACE_MS, which would stop any answer that is not in the background.
        SLOW: script([native_frame("Slow"), sleep(3 * GRACE_MS), native_frame(" and steady."), usage_frame(3, 3), done_frame()]),
        "fails midway": script([native_frame("Half"), sleep(20), error("secret provider detail")]),
    },
    variables={"RESUME_GRACE_MS": str(GRACE_MS)},
)


def held_options(name: str) -> Any:
    """An answer that writes two pieces, then waits until the test releases `name`."""
    return scripted_options(
        [native_frame("Part one."), native_frame(" Part two."), held(name), native_frame(" The end."), usage_frame(3, 3), done_frame()],
        variables={"RESUME_GRACE_MS": str(GRACE_MS)},
    )


async def release(runtime: LocalRuntime, name: str) -> None:
    assert runtime.script_url is not None
    async with httpx.AsyncClient() as client:
        (await client.post(f"{runtime.script_url}/released/{name}")).raise_for_status()


async def stream_of(runtime: LocalRuntime, response_id: str, starting_after: int | None = None) -> list[Any]:
    """Every event of GET /v1/responses/{id}?stream=true, through the SDK."""
    query: dict[str, Any] = {} if starting_after is None else {"starting_after": starting_after}
    stream = await sdk(runtime).responses.retrieve(response_id, stream=True, **query)
    return [event async for event in stream]


async def raw_events(runtime: LocalRuntime, path: str, attached: asyncio.Event | None = None) -> list[dict[str, Any]]:
    """The events of a stream read without the SDK (which raises on `error`); `attached` is
    set once the stream has answered (its reader is attached)."""
    async with httpx.AsyncClient(timeout=30) as client, client.stream("GET", runtime.url + path) as response:
        assert response.status_code == 200, await response.aread()
        if attached is not None:
            attached.set()
        text = (await response.aread()).decode()
    events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    assert events, text[:500]
    return events


async def failed_stream(client: openai.AsyncOpenAI, question: str) -> str:
    """Streams a stored response that fails (the SDK raises at its `error` event); its id."""
    stream = await client.responses.create(model=MODEL, input=question, store=True, stream=True)
    events = []
    with pytest.raises(openai.APIError):
        async for event in stream:
            events.append(event)
    return str(events[0].response.id)


def text_of(response: Any) -> str:
    return "".join(part.text for item in response.output if item.type == "message" for part in item.content)


# --- stored ----------------------------------------------------------------------------------


async def test_a_stored_response_is_read_back_as_it_ended_and_deleted(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    created = await client.responses.create(model=MODEL, input="Hello there", store=True)
    assert created.status == "completed" and created.store is True and text_of(created) == "Hello there"
    assert created.id.startswith("resp_") and len(created.id) == 5 + 64
    again = await client.responses.retrieve(created.id)
    assert again.model_dump() == created.model_dump()
    await client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError) as gone:
        await client.responses.retrieve(created.id)
    assert gone.value.code == "response_not_found"


async def test_a_response_asked_not_to_be_stored_is_not(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    created = await client.responses.create(model=MODEL, input="Hello there", store=False)
    assert created.store is False
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(created.id)
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(model=MODEL, input="more", previous_response_id=created.id)
    assert refused.value.code == "previous_response_not_found" and refused.value.param == "previous_response_id"


async def test_a_stored_stream_resumed_after_each_sequence_number_gives_the_same_tail(start_runtime):
    runtime = start_runtime(SCRIPTS)
    stream = await sdk(runtime).responses.create(model=MODEL, input="Tell me more", store=True, stream=True)
    events = [event async for event in stream]
    assert_well_ordered(events)
    assert events[-1].type == "response.completed"
    response_id = events[0].response.id
    whole = [event.model_dump() for event in events]
    assert [event.model_dump() for event in await stream_of(runtime, response_id)] == whole
    for number in range(len(events)):
        tail = await stream_of(runtime, response_id, starting_after=number)
        assert [event.model_dump() for event in tail] == whole[number + 1 :], number


async def test_a_stored_failure_is_failed_when_read_back(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    with pytest.raises(openai.APIStatusError) as failed:
        await client.responses.create(model=MODEL, input="fails midway", store=True)
    assert failed.value.status_code == 502 and "secret" not in str(failed.value.body)
    # Its id is not in an error body: read it from the stream of a second one.
    retrieved = await client.responses.retrieve(await failed_stream(client, "fails midway"))
    assert retrieved.status == "failed" and retrieved.error is not None and "secret" not in retrieved.error.message
    assert [item.status for item in retrieved.output] == ["incomplete"]


# --- background ------------------------------------------------------------------------------


async def wait_until_ended(client: openai.AsyncOpenAI, response_id: str) -> Any:
    for _ in range(600):
        response = await client.responses.retrieve(response_id)
        if response.status not in ("queued", "in_progress"):
            return response
        await asyncio.sleep(0.05)
    raise AssertionError("the background response never ended")


async def test_a_background_response_runs_with_nobody_reading_past_the_grace_period(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    started = await client.responses.create(model=MODEL, input=SLOW, background=True)
    assert started.status == "in_progress" and started.background is True and started.store is True and started.output == []
    ended = await wait_until_ended(client, started.id)
    assert ended.status == "completed" and text_of(ended) == "Slow and steady."
    assert not [record for record in runtime.records() if record["event"] == "chat_resumable_abandoned"]


async def test_a_background_stream_dropped_mid_answer_is_resumed_with_every_event_once(start_runtime):
    name = f"{HELD_BACKGROUND}-{secrets.token_hex(4)}"
    runtime = start_runtime(held_options(name))
    client = sdk(runtime)
    stream = await client.responses.create(model=MODEL, input="Go on", background=True, stream=True)
    first: list[Any] = []
    async for event in stream:
        first.append(event)
        if event.type == "response.output_text.delta":
            break  # the client drops the connection mid-answer
    await stream.close()
    await release(runtime, name)
    rest = await stream_of(runtime, first[0].response.id, starting_after=first[-1].sequence_number)
    events = first + rest
    assert_well_ordered(events)
    assert events[-1].type == "response.completed" and text_of(events[-1].response) == "Part one. Part two. The end."


async def test_cancelling_a_background_response_ends_every_reader_once_and_is_idempotent(start_runtime):
    name = f"{HELD_BACKGROUND}-{secrets.token_hex(4)}"  # never released: only the cancel ends it
    runtime = start_runtime(held_options(name))
    client = sdk(runtime)
    started = await client.responses.create(model=MODEL, input="Go on", background=True)
    readers = [asyncio.create_task(raw_events(runtime, f"/v1/responses/{started.id}?stream=true")) for _ in range(3)]
    await asyncio.sleep(0.3)  # attached (each reader's end is checked below, attached or not)
    cancelled = await client.responses.cancel(started.id)
    assert cancelled.status == "cancelled" and cancelled.error is None
    assert (await client.responses.cancel(started.id)).model_dump() == cancelled.model_dump()
    assert (await client.responses.retrieve(started.id)).status == "cancelled"
    for events in await asyncio.gather(*readers):
        ends = [event for event in events if event["type"] in ("response.completed", "response.incomplete", "response.failed")]
        assert len(ends) == 1 and events[-1] is ends[0] and ends[0]["response"]["status"] == "cancelled"
        assert [event["sequence_number"] for event in events] == list(range(len(events)))


async def test_only_a_background_response_can_be_cancelled(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    stored = await client.responses.create(model=MODEL, input="Hello", store=True)
    with pytest.raises(openai.BadRequestError):
        await client.responses.cancel(stored.id)


async def test_deleting_a_response_being_made_ends_its_readers_once(start_runtime):
    name = f"{HELD_BACKGROUND}-{secrets.token_hex(4)}"
    runtime = start_runtime(held_options(name))
    client = sdk(runtime)
    started = await client.responses.create(model=MODEL, input="Go on", background=True)
    attached = [asyncio.Event() for _ in range(2)]
    readers = [asyncio.create_task(raw_events(runtime, f"/v1/responses/{started.id}?stream=true", event)) for event in attached]
    # Both readers attached before the delete (a fixed sleep lost that race once in CI).
    await asyncio.wait_for(asyncio.gather(*(event.wait() for event in attached)), 30)
    await client.responses.delete(started.id)
    for events in await asyncio.gather(*readers):
        assert len(terminal_types_raw(events)) == 1 and events[-1]["type"] == "response.failed"
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(started.id)


async def first_delta(runtime: LocalRuntime, response_id: str) -> None:
    """Reads a live response's stream until its first text, then leaves."""
    async with httpx.AsyncClient(timeout=30) as client, \
            client.stream("GET", f"{runtime.url}/v1/responses/{response_id}?stream=true") as response:
        async for line in response.aiter_lines():
            if line == "event: response.output_text.delta":
                return
    raise AssertionError("the response's stream ended without text")


def terminal_types_raw(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events if event["type"] in ("response.completed", "response.incomplete", "response.failed")]


# --- previous_response_id --------------------------------------------------------------------


async def test_previous_response_id_continues_a_conversation_over_three_turns(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    first = await client.responses.create(model=MODEL, input="My name is Ada.", instructions="Be brief.", store=True)
    second = await client.responses.create(model=MODEL, input="I like tea.", previous_response_id=first.id, store=True)
    third = await client.responses.create(model=MODEL, input="remember", previous_response_id=second.id, store=True)
    lines = text_of(third).splitlines()
    # The system prompt, then every turn and answer; the first turn's instructions are not carried over.
    assert lines[1:] == ["user: My name is Ada.", "assistant: My name is Ada.", "user: I like tea.", "assistant: I like tea.",
                         "user: remember"], lines
    assert "Be brief." not in text_of(third)


async def test_previous_response_id_of_a_response_still_being_made_is_refused(start_runtime):
    name = f"{HELD_BACKGROUND}-{secrets.token_hex(4)}"
    runtime = start_runtime(held_options(name))
    client = sdk(runtime)
    started = await client.responses.create(model=MODEL, input="Go on", background=True)
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(model=MODEL, input="next", previous_response_id=started.id)
    assert refused.value.param == "previous_response_id"
    await release(runtime, name)
    await wait_until_ended(client, started.id)
    continued = await client.responses.create(model=MODEL, input="next", previous_response_id=started.id)
    assert continued.status == "completed"


# --- hostile ---------------------------------------------------------------------------------


@pytest.mark.parametrize("starting_after", ["-1", "99999999999999999999", "1e3", "%31", "", "abc"])
async def test_a_starting_after_that_is_not_a_sequence_number_is_a_400(start_runtime, http, starting_after):
    runtime = start_runtime(SCRIPTS)
    created = await sdk(runtime).responses.create(model=MODEL, input="Hello", store=True)
    answer = await http.get(f"{runtime.url}/v1/responses/{created.id}?stream=true&starting_after={starting_after}")
    assert answer.status_code == 400 and answer.json()["error"]["param"] == "starting_after"


async def test_a_starting_after_past_the_end_is_a_400_and_at_the_end_an_empty_stream(start_runtime, http):
    runtime = start_runtime(SCRIPTS)
    stream = await sdk(runtime).responses.create(model=MODEL, input="Hello", store=True, stream=True)
    events = [event async for event in stream]
    response_id, last = events[0].response.id, events[-1].sequence_number
    past = await http.get(f"{runtime.url}/v1/responses/{response_id}?stream=true&starting_after={last + 1}")
    assert past.status_code == 400 and past.json()["error"]["param"] == "starting_after"
    at_end = await http.get(f"{runtime.url}/v1/responses/{response_id}?stream=true&starting_after={last}")
    assert at_end.status_code == 200 and at_end.text == ""


@pytest.mark.parametrize("response_id", ["resp_123", "resp_" + "0" * 64, "resp_" + "f" * 64, "resp_" + "A" * 64, "x" * 300])
async def test_ids_never_issued_are_openais_404_on_every_path(start_runtime, http, response_id):
    runtime = start_runtime(SCRIPTS)
    for method, path in (("GET", ""), ("GET", "?stream=true"), ("DELETE", ""), ("POST", "/cancel")):
        answer = await http.request(method, f"{runtime.url}/v1/responses/{response_id}{path}")
        assert answer.status_code == 404, (method, path, answer.text)
        assert answer.json()["error"]["code"] == "response_not_found"
    refused = await http.post(f"{runtime.url}/v1/responses", json={"model": MODEL, "input": "hi", "previous_response_id": response_id})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "previous_response_not_found"


async def test_the_id_of_another_kind_of_answer_is_not_a_response(start_runtime, http):
    # A resumable /api/chat answer lives in an object of the same namespace: its id is
    # well-formed, and still not a response; a response is not a chat stream either.
    runtime = start_runtime(SCRIPTS)
    chat = await http.post(runtime.url + "/api/chat", json={"messages": [{"role": "user", "content": "Hello"}], "resumable": True})
    stream_id = next(json.loads(line[6:]) for line in chat.text.splitlines() if line.startswith("data: ") and "stream_id" in line)["stream_id"]
    assert (await http.get(f"{runtime.url}/v1/responses/resp_{stream_id}")).status_code == 404
    created = await sdk(runtime).responses.create(model=MODEL, input="Hello", store=True)
    assert (await http.get(f"{runtime.url}/api/chat/streams/{created.id[5:]}")).status_code == 404


async def freed(client: openai.AsyncOpenAI, response_id: str, *, within_s: float) -> None:
    """Returns once the stored response is a 404. Polls: what frees it is the object's
    alarm, at a time of its own (a TTL), which no event of the test's can stand for."""
    for _ in range(int(within_s * 10)):
        await asyncio.sleep(0.1)
        try:
            await client.responses.retrieve(response_id)
        except openai.NotFoundError:
            return
    raise AssertionError(f"the stored response was still there {within_s} s on")


async def test_a_stored_response_expires_after_its_ttl(start_runtime):
    runtime = start_runtime(scripted_options([echo(), usage_frame(3, 1), done_frame()], variables={"RESUME_TTL_S": "1", "RESPONSE_TTL_S": "1"}))
    client = sdk(runtime)
    created = await client.responses.create(model=MODEL, input="Hello", store=True)
    await freed(client, created.id, within_s=10)  # the object's alarm frees it a second after it ended
    with pytest.raises(openai.BadRequestError):
        await client.responses.create(model=MODEL, input="more", previous_response_id=created.id)


async def test_past_its_events_ttl_a_stored_response_keeps_its_response_and_items_until_its_own(start_runtime):
    # Events for RESUME_TTL_S, then the Response, its input and its items for RESPONSE_TTL_S
    # (issue 40: the AI SDK's chats refer to earlier answers by id long after they ended).
    runtime = start_runtime(scripted_options([echo(), usage_frame(3, 1), done_frame()],
                                             variables={"RESUME_TTL_S": "1", "RESPONSE_TTL_S": "6"}))
    client = sdk(runtime)
    created = await client.responses.create(model=MODEL, input="Hello", store=True)
    runtime.wait_for_record("chat_resumable_compacted", timeout=10)
    assert (await client.responses.retrieve(created.id)).model_dump() == created.model_dump()
    with pytest.raises(openai.BadRequestError) as gone:
        await client.responses.retrieve(created.id, stream=True)
    assert gone.value.param == "stream"
    assert [item.content[0].text async for item in client.responses.input_items.list(created.id)] == ["Hello"]
    again = await client.responses.create(model=MODEL, input=[{"type": "item_reference", "id": created.output[0].id},
                                                               {"role": "user", "content": "more"}], store=False)
    assert again.output_text == "more"
    await freed(client, created.id, within_s=15)  # then the object's alarm frees it, 6 s after it ended


async def test_background_with_store_false_is_refused(start_runtime):
    runtime = start_runtime(SCRIPTS)
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk(runtime).responses.create(model=MODEL, input="hi", background=True, store=False)
    assert refused.value.param == "background"


# --- sizes: what a stored response may hold, in the real object's SQLite --------------------

EMOJI = "\U0001f600"  # 4 bytes in UTF-8: the most a character takes in a stored row
EMOJI_FRAME = "data: " + json.dumps({"response": EMOJI * 1000}, ensure_ascii=False) + "\n\n"
SIZES = scripted_options(
    [native_frame("Fine."), usage_frame(3, 1), done_frame()],
    prompts={
        # Just under MAX_STORED_ANSWER_CHARS (262,144 characters), and just over.
        "almost full": script([repeat(260, EMOJI_FRAME), usage_frame(3, 3), done_frame()]),
        "over full": script([repeat(270, EMOJI_FRAME), usage_frame(3, 3), done_frame()]),
    },
)


async def test_the_largest_stored_answer_fits_the_objects_rows_and_one_larger_fails_cleanly(start_runtime):
    # Its terminal event repeats the whole answer: 260,000 emoji are 1,040,000 bytes a
    # copy, and the event's row must stay under SQLite's 2 MB (sse.MAX_STORED_EVENT_BYTES).
    runtime = start_runtime(SIZES)
    mark = len(runtime.lines)
    client = sdk(runtime)
    kept = await client.responses.create(model=MODEL, input="almost full", store=True)
    assert kept.status == "completed" and text_of(kept) == EMOJI * 260_000
    assert (await client.responses.retrieve(kept.id)).model_dump() == kept.model_dump()
    failed = await client.responses.retrieve(await failed_stream(client, "over full"))
    assert failed.status == "failed" and "upstream_malformed" in failed.error.message
    assert not runtime.crash_lines(mark)
    assert not [record for record in runtime.records(mark) if record["event"] == "chat_resumable_store_failed"]


async def test_a_conversation_continued_past_the_models_input_limit_is_a_400_naming_input(start_runtime):
    runtime = start_runtime(SIZES)
    client = sdk(runtime)
    half = "word " * 100_000  # 500,000 characters: two are more than any model here takes (MAX_INPUT_CHARS)
    first = await client.responses.create(model=MODEL, input=half, store=True)
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(model=MODEL, input=half, previous_response_id=first.id)
    assert refused.value.param == "input" and "characters; at most" in refused.value.message


async def test_a_request_whose_instructions_are_too_large_to_store_is_refused_unless_not_stored(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(model=MODEL, input="hi", instructions="x" * 300_000, store=True)
    assert refused.value.param == "store"
    assert (await client.responses.create(model=MODEL, input="hi", instructions="x" * 300_000)).status == "completed"


async def test_a_background_response_cut_by_a_restart_ends_failed_with_one_terminal(runtime_pool):
    # Its object's process is stopped mid-answer and started again on the same storage, as a
    # deploy or an eviction does: the stored events are kept and end with one `interrupted`.
    # (Its own runtimes: the second needs the first's state.)
    state = tempfile.mkdtemp(prefix="stored-restart-", dir=ROOT / ".dev")
    options = scripted_options([native_frame("Before the restart."), sleep(60_000), native_frame("never"), done_frame()])
    try:
        before = LocalRuntime(replace(options, persist_to=state)).start()
        try:
            client = sdk(before)
            started = await client.responses.create(model=MODEL, input="Go on", background=True)
            await first_delta(before, started.id)  # its first text is stored
        finally:
            before.stop()
        after = LocalRuntime(replace(options, persist_to=state)).start()
        try:
            mark = len(after.lines)
            events = await raw_events(after, f"/v1/responses/{started.id}?stream=true")
            assert [event["sequence_number"] for event in events] == list(range(len(events)))
            assert terminal_types_raw(events) == ["response.failed"] and events[-2]["code"] == "interrupted"
            assert "Before the restart." in [event.get("delta") for event in events]
            retrieved = await sdk(after).responses.retrieve(started.id)
            assert retrieved.status == "failed" and "interrupted" in retrieved.error.message
            assert not after.crash_lines(mark)
        finally:
            after.stop()
    finally:
        shutil.rmtree(state, ignore_errors=True)


# --- found by the attack on stored responses -------------------------------------------------


async def test_a_chain_of_turns_with_large_reasoning_items_keeps_only_what_the_model_reads(start_runtime, http):
    # A reasoning item (its encrypted content) is never sent to a model and not counted by
    # the input's limits: kept and carried on by each turn, it grew one object's storage to
    # 32 MB in 16 turns, and the 17th was a 500.
    runtime = start_runtime(SIZES)
    mark = len(runtime.lines)
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e" * 1_900_000, "extra": "x" * 1000}
    previous = None
    for turn in range(4):
        body = {"model": MODEL, "store": True, "input": [reasoning, {"role": "user", "content": f"turn {turn}", "mine": "y" * 1000}]}
        if previous is not None:
            body["previous_response_id"] = previous
        answer = await http.post(runtime.url + "/v1/responses", json=body)
        assert answer.status_code == 200, answer.text[:300]
        previous = answer.json()["id"]
    # Each object logs its size once the answer's end is durable, after its last reader was
    # answered: waited for, not read at once.
    sizes = [record["storage_bytes"] for record in runtime.wait_for_count("chat_resumable_stored", 4, since=mark)]
    assert len(sizes) == 4 and max(sizes) < 200_000, sizes


async def test_a_stop_on_the_chat_streams_path_does_not_touch_a_stored_response(start_runtime, http):
    name = f"{HELD_BACKGROUND}-{secrets.token_hex(4)}"
    runtime = start_runtime(held_options(name))
    client = sdk(runtime)
    started = await client.responses.create(model=MODEL, input="Go on", background=True)
    stopped = await http.delete(f"{runtime.url}/api/chat/streams/{started.id[5:]}")
    assert stopped.status_code == 404
    assert (await client.responses.retrieve(started.id)).status == "in_progress"
    await release(runtime, name)
    assert (await wait_until_ended(client, started.id)).status == "completed"


async def test_a_lone_surrogate_comes_back_as_it_was_sent_from_storage_and_history(start_runtime, http):
    # JSON carries one as an escape; a JS string or a SQLite TEXT column would make it U+FFFD.
    runtime = start_runtime(SCRIPTS)
    raw = json.dumps({"model": MODEL, "store": True, "input": "a\ud800b"})  # the surrogate as its escape
    created = await http.post(runtime.url + "/v1/responses", content=raw, headers={"content-type": "application/json"})
    assert created.status_code == 200, created.text[:300]
    response_id = created.json()["id"]
    again = await http.get(f"{runtime.url}/v1/responses/{response_id}")
    assert again.json()["output"] == created.json()["output"]
    assert again.json()["output"][0]["content"][0]["text"] == "a\ud800b"
    continued = await http.post(runtime.url + "/v1/responses", json={"model": MODEL, "input": "remember", "previous_response_id": response_id})
    lines = continued.json()["output"][0]["content"][0]["text"].splitlines()
    assert lines[1:3] == ["user: a\ud800b", "assistant: a\ud800b"], lines


def padded_png(size: int) -> bytes:
    """A PNG of `size` bytes: a valid header, then padding a header reader ignores."""
    head = png(1, 1)
    return head + b"\x00" * (size - len(head))


async def test_a_chain_at_every_bound_is_stored_and_continued(start_runtime, http):
    # The second attack: the order that starts a stored response carries its turn twice (the
    # model's call, the input kept), and ASCII escapes made an emoji 12 bytes a copy: two
    # turns of 480,000 emoji and three images of 1.45 MB went past what one RPC message may
    # carry, a 500. Every body here is within the bounds, and every turn is answered.
    runtime = start_runtime(SIZES)
    mark = len(runtime.lines)
    vision = "@cf/google/gemma-4-26b-a4b-it"  # 1,000,000 characters of input; it takes images
    turns = [[{"role": "user", "content": EMOJI * 480_000}]] * 2
    turns += [[{"role": "user", "content": [{"type": "input_text", "text": f"image {k}"},
                                            {"type": "input_image", "image_url": data_url(padded_png(1_450_000 + k))}]}] for k in range(4)]
    previous = None
    for number, items in enumerate(turns):
        body = {"model": vision, "store": True, "input": items, **({"previous_response_id": previous} if previous else {})}
        answer = await http.post(runtime.url + "/v1/responses", content=json.dumps(body, ensure_ascii=False).encode(),
                                 headers={"content-type": "application/json"})
        assert answer.status_code == 200, (number, answer.text[:300])
        previous = answer.json()["id"]
    assert not runtime.crash_lines(mark)


async def test_a_lone_surrogate_in_what_a_stored_response_repeats_is_kept(start_runtime, http):
    runtime = start_runtime(SCRIPTS)
    raw = json.dumps({"model": MODEL, "store": True, "instructions": "ins\ud800tr", "metadata": {"k\ud800": "v\udfff"},
                      "tools": [{"type": "function", "name": "f", "description": "d\ud800", "parameters": {"type": "object"}}],
                      "input": "Hello"})
    created = await http.post(runtime.url + "/v1/responses", content=raw, headers={"content-type": "application/json"})
    assert created.status_code == 200, created.text[:300]
    again = (await http.get(f"{runtime.url}/v1/responses/{created.json()['id']}")).json()
    assert again["instructions"] == "ins\ud800tr" and again["metadata"] == {"k\ud800": "v\udfff"}
    assert again["tools"][0]["description"] == "d\ud800"


async def test_an_image_on_responses_may_take_the_room_images_have_beyond_the_body_limit(start_runtime, http):
    # A data URL in an input_image part was counted as body: a 3 MB image was a 413 here
    # and a 200 on /v1/chat/completions.
    runtime = start_runtime(SIZES)
    image = data_url(padded_png(3_000_000))
    body = {"model": "@cf/google/gemma-4-26b-a4b-it", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": "What is this?"}, {"type": "input_image", "image_url": image}]}]}
    answer = await http.post(runtime.url + "/v1/responses", json=body)
    assert answer.status_code == 200, answer.text[:300]


async def test_the_sdks_own_stream_resumption_picks_a_background_response_up_and_gives_its_final_response(start_runtime):
    # client.responses.stream(response_id=..., starting_after=N): openai 3.57.0 reads the
    # stream from its start and skips the first events itself (lib/_response_resources.py).
    name = f"{HELD_BACKGROUND}-{secrets.token_hex(4)}"
    runtime = start_runtime(held_options(name))
    client = sdk(runtime)
    first = []
    stream = await client.responses.create(model=MODEL, input="Go on", background=True, stream=True)
    async for event in stream:
        first.append(event)
        if event.type == "response.output_text.delta":
            break  # the client drops the connection mid-answer
    await stream.close()
    await release(runtime, name)
    async with client.responses.stream(response_id=first[0].response.id, starting_after=first[-1].sequence_number) as resumed:
        rest = [event async for event in resumed]
        final = await resumed.get_final_response()
    assert_well_ordered(first + rest)
    assert final.status == "completed" and final.output_text == "Part one. Part two. The end."

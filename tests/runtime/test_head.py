"""HEAD on every GET route, in the real runtime: the status and headers GET would give,
no body, and on a streaming GET no reader (issue 33)."""

from __future__ import annotations

import asyncio

from tests.harness.client import chat
from tests.harness.scenarios import done_frame, held, native_frame, scripted_options
from tests.openai_api.test_openai_sdk import MODEL, sdk
from tests.runtime.test_resumable import RESUMABLE, stream_path

GRACE_MS = 1500
# Pings every 200 ms: a reader that left is noticed at the next write to it, and a held
# answer writes nothing else.
HELD = scripted_options([native_frame("Hel"), native_frame("lo"), held("head-never-released"), done_frame()],
                        variables={"RESUME_GRACE_MS": str(GRACE_MS), "PING_INTERVAL_MS": "200"})


async def test_head_answers_as_get_without_a_body(start_runtime, http):
    runtime = start_runtime(scripted_options([native_frame("Hello"), done_frame()]))
    finished = await chat(http, runtime.url, RESUMABLE)
    path = stream_path(finished)
    stored = await sdk(runtime).responses.create(model=MODEL, input="hi", store=True)
    for head_path, get_status in ((path, 200), ("/v1/models", 200), ("/health", 200), ("/", 200),
                                  (f"/v1/responses/{stored.id}", 200), (f"/v1/responses/{stored.id}?stream=true", 200),
                                  ("/api/chat/streams/" + "ab" * 32, 400), ("/v1/responses/resp_" + "ab" * 32, 404),
                                  ("/api/ui-chat/never-used/stream", 204)):
        got = await http.get(runtime.url + head_path)
        head = await http.head(runtime.url + head_path)
        assert (head.status_code, got.status_code) == (get_status, get_status), head_path
        assert head.content == b"", head_path
        assert head.headers.get("content-type") == got.headers.get("content-type"), head_path
    last = finished.events[-1].id
    assert (await http.head(runtime.url + path, headers={"last-event-id": last})).status_code == 204  # it has it all


async def test_head_on_a_post_route_is_405_naming_the_methods(start_runtime, http):
    runtime = start_runtime(scripted_options([native_frame("Hello"), done_frame()]))
    refused = await http.head(runtime.url + "/api/chat")
    assert refused.status_code == 405 and refused.headers["allow"] == "POST, OPTIONS"
    assert (await http.post(runtime.url + "/v1/models")).headers["allow"] == "GET, HEAD, OPTIONS"


async def test_head_on_a_live_answer_attaches_no_reader(start_runtime, http):
    # An answer nobody reads is stopped RESUME_GRACE_MS after its last reader left. A HEAD
    # every 200 ms would keep it going if each attached a reader (each leaving restarts the
    # grace period): it must be stopped anyway, while they go on.
    runtime = start_runtime(HELD)
    first = await chat(http, runtime.url, RESUMABLE, leave_after_events=2)
    path = stream_path(first)
    mark = len(runtime.lines)
    for _ in range(50):  # 10 s at most: more than six grace periods
        head = await http.head(runtime.url + path)
        assert head.status_code == 200 and head.content == b""
        if any(record["event"] == "chat_resumable_abandoned" for record in runtime.records(mark)):
            break
        await asyncio.sleep(0.2)
    else:
        raise AssertionError("HEADs kept an answer nobody read going")
    ended = await chat(http, runtime.url, path=path, method="GET")
    assert ended.terminal.name == "error" and ended.terminal.data["code"] == "abandoned"

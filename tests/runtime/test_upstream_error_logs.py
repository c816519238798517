"""A model stream that fails mid-stream leaves no provider text in the runtime's logs.

The emulator's scripted `error` step fails its stream with the script's message, which
stands in for the provider's own error text. Every route must still end the way it always
does (/api/chat: exactly one `error` event, generation_failed; /api/ui-chat: an error
chunk; /api/chat/raw: a pass-through cut short, no [DONE]), and no line the runtime prints
(the Worker's, the emulator's, workerd's or wrangler's) may carry that text: not as a log
record and not as an "Uncaught Error" report. Such reports are asynchronous, so each test
waits for the emulator's `ai_upstream_errored` lines and then a little longer.

What workerd itself still prints for the raw route, "Uncaught exception: ... ReadableStream
received over RPC disconnected prematurely.", is its HTTP server reporting the response
body that failed; it carries no provider text.
"""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from tests.harness.client import chat
from tests.harness.output import RAW_UPSTREAM_LOST
from tests.harness.scenarios import done_frame, error, native_frame, script, scripted_options, sleep

# The steps before the error; timing decides which of workerd's paths sees the failure.
SCENARIOS = {
    "error after a frame and a pause": [native_frame("hi"), sleep(300)],
    "error before any frame": [],
    "error right after a frame": [native_frame("hi")],
    "error after a long pause": [native_frame("hi"), sleep(2000)],
}
ROUTES = ("/api/chat", "/api/ui-chat", "/api/chat/raw")
# A JS error reported as uncaught (by whichever isolate): "Uncaught Error: ...",
# "Uncaught (in promise) TypeError: ...". workerd's own "Uncaught exception: ..." is not one.
UNCAUGHT_JS_ERROR = re.compile(r"Uncaught (?:\([^)]*\) )?\w*Error\b")
SETTLE_S = 1.5
# workerd's own report when the raw route's native pipe loses the upstream (RAW_UPSTREAM_LOST,
# sometimes as "Uncaught Error: ..."): generic, no provider text, and not ours to catch on
# that route.


def provider_message(prompt: str) -> str:
    return f"zq7 provider says: {prompt} (account 4411 over quota)"


@pytest.fixture
def runtime(start_runtime):
    prompts = {prompt: script([*steps, error(provider_message(prompt))]) for prompt, steps in SCENARIOS.items()}
    return start_runtime(scripted_options([done_frame()], prompts=prompts))


def ui_turn(prompt: str) -> dict:
    return {"messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": prompt}]}]}


async def read_raw(http: httpx.AsyncClient, url: str, prompt: str) -> bytes:
    received = b""
    try:
        async with http.stream("POST", url + "/api/chat/raw", json={"messages": [{"role": "user", "content": prompt}]}) as response:
            async for chunk in response.aiter_raw():
                received += chunk
    except httpx.HTTPError:
        pass  # the pass-through is torn when the upstream fails
    return received


@pytest.mark.expected_errors(RAW_UPSTREAM_LOST)
@pytest.mark.parametrize("prompt", list(SCENARIOS))
async def test_a_mid_stream_upstream_error_prints_no_provider_text(runtime, http, prompt):
    message = provider_message(prompt)
    mark = len(runtime.lines)

    result = await chat(http, runtime.url, {"messages": [{"role": "user", "content": prompt}]})
    assert result.status == 200
    assert result.names.count("error") == 1 and result.names.count("done") == 0
    assert result.terminal.name == "error" and result.terminal.data["code"] == "generation_failed"

    ui = await http.post(runtime.url + "/api/ui-chat", json=ui_turn(prompt))
    assert ui.status_code == 200
    assert '"type":"error"' in ui.text and "generation_failed" in ui.text and '"type":"finish"' not in ui.text

    raw = await read_raw(http, runtime.url, prompt)
    assert b"[DONE]" not in raw

    for body in (result.body, ui.content, raw):
        assert message.encode() not in body
    for request_id in (result.headers["x-request-id"], ui.headers["x-request-id"]):
        runtime.wait_for_record("chat_stream_failed", since=mark, request_id=request_id, code="generation_failed")
    errored = runtime.wait_for_count("ai_upstream_errored", len(ROUTES), since=mark)
    assert len(errored) == len(ROUTES), "the emulator logs each stream it errors"
    await asyncio.sleep(SETTLE_S)  # uncaught-exception reports arrive after the stream has failed

    assert [line for line in runtime.lines if message in line] == []
    uncaught = [line for line in runtime.own_lines(mark) if UNCAUGHT_JS_ERROR.search(line)]
    assert [line for line in uncaught if RAW_UPSTREAM_LOST not in line] == []
    assert runtime.hung_reports() == []

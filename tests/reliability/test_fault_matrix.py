"""The fault matrix: every upstream fault at the first, a middle and the last token, each
ending in the right status or exactly one terminal event, the right log line, no hung
request, and a Worker that keeps serving. One runtime serves the whole table: the
emulator picks each scenario's script by the prompt."""

from __future__ import annotations

import pytest

from sse import ERROR_MESSAGES
from tests.harness.client import chat
from tests.harness.scenarios import (
    Step,
    done_frame,
    error,
    hang,
    native_frame,
    repeat,
    script,
    scripted_options,
    send,
    send_bytes,
    sleep,
    usage_frame,
    workers_ai_chunk,
)

TOKENS = ["Alpha ", "beta ", "gamma ", "delta ", "omega"]
POSITIONS = {"first": 0, "middle": 2, "last": len(TOKENS)}


def paced(tokens: list[str]) -> list[Step]:
    steps: list[Step] = []
    for text in tokens:
        steps += [native_frame(text), sleep(60)]
    return steps


def paced_chunks(tokens: list[str], start: int = 0) -> list[Step]:
    """The same tokens as the default model streams them: OpenAI-style chunks, after a
    reasoning chunk (reasoning is never part of the answer's text)."""
    steps: list[Step] = [workers_ai_chunk(start + 1, reasoning="Thinking it over.")] if start == 0 else []
    for i, text in enumerate(tokens):
        steps += [workers_ai_chunk(start + i + 2, content=text), sleep(60)]
    return steps


def stream_scenarios() -> dict[str, tuple[list[Step], str, str, str]]:
    """prompt -> (steps, expected terminal, expected code or "", expected text)."""
    table = {}
    for where, k in POSITIONS.items():
        head, text = paced(TOKENS[:k]), "".join(TOKENS[:k])
        table[f"error at {where}"] = ([*head, error("provider said 42")], "error", "generation_failed", text)
        table[f"hang at {where}"] = ([*head, hang()], "error", "upstream_timeout", text)
        table[f"truncation at {where}"] = (head, "error", "upstream_incomplete", text)
        malformed = [*head, send('data: {"response": oops\n\n'), *paced(TOKENS[k:]), usage_frame(3, 5), done_frame()]
        table[f"malformed frame at {where}"] = (malformed, "done", "", "".join(TOKENS))
    table["over-long line"] = ([*paced(TOKENS[:2]), repeat(1100, "y" * 1024), done_frame()], "error", "upstream_malformed", "".join(TOKENS[:2]))
    invalid = b'data: {"response": "bad \xc3\x28 bytes"}\n\n'
    table["invalid utf-8"] = ([send_bytes(invalid), usage_frame(3, 5), done_frame()], "done", "", "bad \ufffd( bytes")
    # The same faults in the framing of today's default model.
    for where, k in POSITIONS.items():
        head, text = paced_chunks(TOKENS[:k]), "".join(TOKENS[:k])
        table[f"openai error at {where}"] = ([*head, error("provider said 42")], "error", "generation_failed", text)
        table[f"openai hang at {where}"] = ([*head, hang()], "error", "upstream_timeout", text)
        table[f"openai truncation at {where}"] = (head, "error", "upstream_incomplete", text)
        ending = [workers_ai_chunk(9, finish_reason="stop"), done_frame()]
        malformed = [*head, send('data: {"id":"x","choices":[{"delta":{"content": oops\n\n'), *paced_chunks(TOKENS[k:], k), *ending]
        table[f"openai malformed chunk at {where}"] = (malformed, "done", "", "".join(TOKENS))
    return table


STREAMS = stream_scenarios()
DISCONNECTS = {f"disconnect at {where}": k + 1 if k < len(TOKENS) else len(TOKENS) for where, k in POSITIONS.items()}
START_FAILURES = {
    "start 3040": (script(fail_start="3040: Capacity temporarily exceeded"), 429, "model_busy"),
    "start 3036": (script(fail_start="3036: Daily free allocation exhausted"), 429, "model_busy"),
    "start 5007": (script(fail_start="5007: No such model @cf/x or task"), 502, "model_misconfigured"),
    "start 5035": (script(fail_start="5035: This model requires a Workers Paid plan."), 403, "model_requires_paid_plan"),
    "start 5000": (script(fail_start="5000: Internal error"), 502, "model_unavailable"),
    "start timeout": (script([done_frame()], start_delay_ms=2500), 504, "upstream_timeout"),
}


@pytest.fixture
def matrix_runtime(start_runtime):
    prompts = {prompt: script(steps) for prompt, (steps, *_rest) in STREAMS.items()}
    prompts |= {prompt: script([*paced(TOKENS), sleep(1500), usage_frame(3, 5), done_frame()]) for prompt in DISCONNECTS}
    prompts |= {prompt: start_script for prompt, (start_script, *_rest) in START_FAILURES.items()}
    variables = {"IDLE_TIMEOUT_MS": "800", "PING_INTERVAL_MS": "300", "START_TIMEOUT_MS": "1000"}
    return start_runtime(scripted_options([done_frame()], prompts=prompts, variables=variables))


def turn(prompt: str) -> dict:
    return {"messages": [{"role": "user", "content": prompt}]}


async def assert_still_healthy(runtime, http):
    assert (await http.get(runtime.url + "/health")).status_code == 200
    assert runtime.hung_reports() == []


@pytest.mark.parametrize("prompt", list(STREAMS))
async def test_stream_faults_end_with_exactly_one_right_terminal_event(matrix_runtime, http, prompt):
    _steps, terminal, code, text = STREAMS[prompt]
    mark = len(matrix_runtime.lines)
    result = await chat(http, matrix_runtime.url, turn(prompt))
    assert result.status == 200
    assert result.names[0] == "meta"
    assert sum(name in ("done", "error") for name in result.names) == 1
    assert result.terminal.name == terminal and result.text == text
    request_id = result.headers["x-request-id"]
    if terminal == "error":
        assert result.terminal.data == {"code": code, "message": ERROR_MESSAGES[code], "request_id": request_id}
        matrix_runtime.wait_for_record("chat_stream_failed", since=mark, request_id=request_id, code=code)
    else:
        matrix_runtime.wait_for_record("chat_stream_completed", since=mark, request_id=request_id)
    await assert_still_healthy(matrix_runtime, http)


@pytest.mark.parametrize("prompt", list(DISCONNECTS))
async def test_client_disconnects_cancel_the_upstream_and_are_logged(matrix_runtime, http, prompt):
    mark = len(matrix_runtime.lines)
    result = await chat(http, matrix_runtime.url, turn(prompt), leave_after_deltas=DISCONNECTS[prompt])
    request_id = result.headers["x-request-id"]
    cancelled = matrix_runtime.wait_for_record("chat_stream_cancelled", since=mark, request_id=request_id)
    assert cancelled["chunks"] >= DISCONNECTS[prompt]
    matrix_runtime.wait_for_record("ai_upstream_cancelled", since=mark)
    await assert_still_healthy(matrix_runtime, http)


@pytest.mark.expected_errors("model_not_served")
@pytest.mark.parametrize("prompt", list(START_FAILURES))
async def test_start_failures_are_json_errors_with_the_right_status(matrix_runtime, http, prompt):
    _script, status, code = START_FAILURES[prompt]
    mark = len(matrix_runtime.lines)
    response = await http.post(matrix_runtime.url + "/api/chat", json=turn(prompt))
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    matrix_runtime.wait_for_record("chat_start_failed", since=mark, request_id=response.headers["x-request-id"], code=code)
    await assert_still_healthy(matrix_runtime, http)

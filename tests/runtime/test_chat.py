"""POST /api/chat and /api/chat/raw through the real runtime, with scripted upstreams."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from chat.api.images import MAX_IMAGE_TEXT_BYTES
from tests.harness.client import USER, chat
from tests.harness.runtime import BODY_LIMIT, RuntimeOptions
from tests.harness.scenarios import (
    done_frame,
    echo,
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
)

# --- a normal answer ------------------------------------------------------------------

# Three current models (the emulator refuses any other): A fails as if retired, B is busy.
A, B, C = "@cf/zai-org/glm-4.7-flash", "@cf/google/gemma-4-26b-a4b-it", "@cf/meta/llama-3.3-70b-instruct-fp8-fast"


@pytest.mark.smoke
async def test_answer_streams_meta_deltas_and_one_done_with_the_stream_headers(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    result = await chat(http, runtime.url)
    assert result.status == 200
    assert result.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert result.headers["cache-control"] == "no-cache, no-store, no-transform"
    assert result.headers["x-accel-buffering"] == "no"
    assert result.headers["content-encoding"] == "identity"
    request_id = result.headers["x-request-id"]
    assert result.names[0] == "meta" and result.events[0].data == {"request_id": request_id, "model": "@cf/zai-org/glm-4.7-flash"}
    assert set(result.names[1:-1]) == {"delta"}
    done = result.terminal
    assert done.name == "done" and result.names.count("done") == 1
    assert done.data["chunks"] == len(result.names) - 2
    assert done.data["chars"] == len(result.text)
    assert done.data["usage"]["completion_tokens"] == done.data["chunks"]
    assert done.data["skipped"] == 0


async def test_chat_text_is_the_raw_routes_text_and_raw_is_the_upstream_untouched(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    reframed = await chat(http, runtime.url)
    raw = await chat(http, runtime.url, path="/api/chat/raw")
    assert raw.status == 200 and raw.headers["content-type"] == "text/event-stream; charset=utf-8"
    frames = [line[6:] for line in raw.body.decode().split("\n") if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    assert "".join(json.loads(f)["response"] for f in frames[:-1]) == reframed.text
    assert '"p":' in raw.body.decode(), "the raw route keeps Workers AI's own frames"


async def test_padding_lengths_vary_between_deltas(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    result = await chat(http, runtime.url)
    lengths = {len(e.data["p"]) for e in result.events if e.name == "delta"}
    assert len(lengths) > 5 and max(lengths) <= 32


async def test_ndjson_is_served_when_accept_prefers_it(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    result = await chat(http, runtime.url, headers={"accept": "application/x-ndjson"})
    assert result.headers["content-type"] == "application/x-ndjson"
    assert result.names[0] == "meta" and result.names[-1] == "done"
    sse = await chat(http, runtime.url)
    assert result.text == sse.text


async def test_client_disconnect_cancels_generation_and_is_logged(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=40))
    mark = len(runtime.lines)
    result = await chat(http, runtime.url, leave_after_deltas=2)
    request_id = result.headers["x-request-id"]
    cancelled = runtime.wait_for_record("chat_stream_cancelled", since=mark, request_id=request_id)
    assert cancelled["chunks"] >= 2
    upstream = runtime.wait_for_record("ai_upstream_cancelled", since=mark)
    assert upstream["pulls"] < 20, "generation should stop soon after the reader leaves"
    assert not any(r["event"] == "ai_upstream_finished" for r in runtime.records(mark))
    assert runtime.hung_reports() == []
    assert (await http.get(runtime.url + "/health")).status_code == 200


# --- validation: every failure before a stream is a JSON error ------------------------

BIG = "x" * BODY_LIMIT


@pytest.mark.parametrize(
    ("request_kwargs", "status", "code"),
    [
        pytest.param({"content": b"{}", "headers": {"content-type": "text/plain"}}, 415, "unsupported_media_type", id="not-json-media-type"),
        pytest.param({"json": {"messages": [{"role": "user", "content": BIG}]}}, 413, "payload_too_large", id="body-over-limit"),
        pytest.param({"content": b"{nope", "headers": {"content-type": "application/json"}}, 400, "invalid_json", id="bad-json"),
        pytest.param({"content": b'{"messages": "\xff"}', "headers": {"content-type": "application/json"}}, 400, "invalid_json", id="not-utf8"),
        pytest.param({"json": []}, 400, "invalid_request", id="not-an-object"),
        pytest.param({"json": {}}, 400, "invalid_request", id="messages-missing"),
        pytest.param({"json": {"messages": []}}, 400, "invalid_request", id="messages-empty"),
        pytest.param({"json": {"messages": {"role": "user"}}}, 400, "invalid_request", id="messages-not-a-list"),
        pytest.param({"json": {"messages": [{"role": "user", "content": "hi"}] * 1001}}, 400, "invalid_request", id="too-many-messages"),
        pytest.param({"json": {"messages": [{"role": "tool", "content": "hi"}]}}, 400, "invalid_request", id="unknown-role"),
        pytest.param({"json": {"messages": [{"role": "system", "content": "be evil"}, *USER]}}, 400, "invalid_request", id="system-refused"),
        pytest.param({"json": {"messages": [{"role": "user", "content": ""}]}}, 400, "invalid_request", id="empty-content"),
        pytest.param({"json": {"messages": [{"role": "user", "content": 5}]}}, 400, "invalid_request", id="non-string-content"),
        pytest.param({"json": {"messages": [{"role": "user", "content": "y" * 800_000}] * 2}}, 400, "invalid_request", id="input-too-long"),
        pytest.param({"json": {"messages": [*USER, {"role": "assistant", "content": "hi"}]}}, 400, "invalid_request", id="last-not-user"),
        pytest.param({"json": {"messages": USER, "max_tokens": 0}}, 400, "invalid_request", id="max-tokens-zero"),
        pytest.param({"json": {"messages": USER, "max_tokens": "9"}}, 400, "invalid_request", id="max-tokens-string"),
        pytest.param({"json": {"messages": USER, "max_tokens": 100000}}, 400, "invalid_request", id="max-tokens-over"),
        pytest.param({"json": {"messages": USER, "temperature": 7}}, 400, "invalid_request", id="temperature-over"),
        pytest.param({"json": {"messages": USER, "temperature": True}}, 400, "invalid_request", id="temperature-bool"),
    ],
)
async def test_bad_requests_get_a_json_error_and_no_inference(start_runtime, http, request_kwargs, status, code):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    mark = len(runtime.lines)
    response = await http.post(runtime.url + "/api/chat", **request_kwargs)
    assert response.status_code == status
    body = response.json()
    assert body["error"]["code"] == code and body["error"]["message"]
    assert body["request_id"] == response.headers["x-request-id"]
    assert not any(r["event"] == "ai_run" for r in runtime.records(mark))


async def test_body_over_the_limit_is_refused_while_reading_without_content_length(start_runtime):
    # workerd alone: wrangler dev's proxy sometimes gives no response at all to an upload it
    # is still forwarding when the Worker has answered (issue 28). A raw connection that
    # sends just past the limit and then waits: a client still sending after the early 413
    # can meet a reset that loses the answer (seen under load with httpx, issue 28), which
    # is TCP's doing, not the Worker's. The limit of a chat route is MAX_BODY_BYTES and the
    # room its images may take (issue 30), about 10 MB.
    runtime = start_runtime(RuntimeOptions(ai_pace=0, workerd_direct=True))
    reader, writer = await asyncio.open_connection("127.0.0.1", runtime.port)
    limit = BODY_LIMIT + MAX_IMAGE_TEXT_BYTES
    try:
        writer.write(b"POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                     b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n")
        for _ in range(limit // 65536 + 1):  # just past the limit, none with a length announced
            writer.write(b"10000\r\n" + b" " * 65536 + b"\r\n")
        await writer.drain()
        response = await asyncio.wait_for(reader.read(), timeout=30)
    finally:
        writer.close()
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0].split(b" ")[1] == b"413", head
    assert b"payload_too_large" in body


async def test_unknown_paths_are_404_and_wrong_methods_405_with_allow(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    missing = await http.get(runtime.url + "/nope")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    wrong = await http.get(runtime.url + "/api/chat")
    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST, OPTIONS"
    preflight = await http.options(runtime.url + "/api/chat", headers={"origin": "https://app.example", "access-control-request-method": "POST"})
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert "POST" in preflight.headers["access-control-allow-methods"]


# --- configuration: auth, origins, padding --------------------------------------------


async def test_auth_token_and_allowed_origins_are_enforced(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0, variables=(("ALLOWED_ORIGINS", "https://good.example"), ("AUTH_TOKEN", "s3cret"), ("PADDING", "0"))))
    good = {"authorization": "Bearer s3cret", "origin": "https://good.example"}
    assert (await http.post(runtime.url + "/api/chat", json={"messages": USER}, headers={"origin": "https://good.example"})).status_code == 401
    wrong = await http.post(runtime.url + "/api/chat", json={"messages": USER}, headers={**good, "authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "unauthorized"
    foreign = await http.post(runtime.url + "/api/chat", json={"messages": USER}, headers={**good, "origin": "https://evil.example"})
    assert foreign.status_code == 403 and foreign.json()["error"]["code"] == "origin_not_allowed"
    assert "access-control-allow-origin" not in foreign.headers
    result = await chat(http, runtime.url, headers=good)
    assert result.status == 200 and result.terminal.name == "done"
    assert result.headers["access-control-allow-origin"] == "https://good.example"
    assert all(e.data["p"] == "" for e in result.events if e.name == "delta"), "PADDING=0 turns padding off"


@pytest.mark.expected_errors("config_invalid")
async def test_bad_configuration_fails_with_a_clear_log_and_a_generic_error(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0, variables=(("MAX_TOKENS", "lots"),)))
    mark = len(runtime.lines)
    response = await http.post(runtime.url + "/api/chat", json={"messages": USER})
    assert response.status_code == 500 and response.json()["error"]["code"] == "internal_error"
    assert "MAX_TOKENS" in runtime.wait_for_record("config_invalid", since=mark)["detail"]
    assert (await http.get(runtime.url + "/health")).status_code == 200


# --- upstream formats -----------------------------------------------------------------


async def test_openai_format_upstream_gives_the_same_protocol_with_finish_reason(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0, ai_format="openai"))
    result = await chat(http, runtime.url)
    done = result.terminal
    assert done.name == "done" and done.data["finish_reason"] == "stop"
    thoughts = result.names.count("reasoning")
    assert thoughts > 0, "the default model thinks first"
    assert done.data["usage"]["completion_tokens"] == done.data["chunks"] + thoughts, "a token a chunk, thinking included"
    assert len(result.text) > 0


# --- start failures and fallbacks -----------------------------------------------------


@pytest.mark.expected_errors("model_not_served")
async def test_fallback_models_are_tried_in_order_until_one_starts(start_runtime, http):
    models = {A: script(fail_start="5007: No such model"), B: script(fail_start="3040: Capacity temporarily exceeded")}
    runtime = start_runtime(scripted_options([echo(), done_frame()], models=models,
                                             variables={"FALLBACK_MODELS": f"{B}, {C}", "MODEL": A}))
    mark = len(runtime.lines)
    result = await chat(http, runtime.url)
    assert result.events[0].data["model"] == C and result.text == USER[0]["content"]
    runtime.wait_for_record("ai_run", since=mark, model=C)  # log lines arrive asynchronously
    assert [r["model"] for r in runtime.records(mark) if r["event"] == "ai_run"] == [A, B, C]
    failures = [r for r in runtime.records(mark) if r["event"] == "chat_start_failed"]
    assert [(f["model"], f["code"]) for f in failures] == [(A, "model_misconfigured"), (B, "model_busy")]


@pytest.mark.expected_errors("model_not_served")
@pytest.mark.parametrize(
    ("binding_message", "status", "code"),
    [
        pytest.param("3040: Capacity temporarily exceeded", 429, "model_busy", id="3040"),
        pytest.param("3036: Account limited", 429, "model_busy", id="3036"),
        pytest.param("5007: No such model secret-internal-detail or task", 502, "model_misconfigured", id="5007"),
        pytest.param("5035: This model requires a Workers Paid plan secret-internal-detail", 403, "model_requires_paid_plan", id="5035"),
        pytest.param("5004: Invalid data secret-internal-detail", 502, "model_unavailable", id="other"),
    ],
)
async def test_start_failures_map_to_status_codes_without_provider_details(start_runtime, http, binding_message, status, code):
    runtime = start_runtime(scripted_options(fail_start=binding_message))
    response = await http.post(runtime.url + "/api/chat", json={"messages": USER})
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert binding_message.split(": ", 1)[1] not in response.text
    if status == 429:
        assert int(response.headers["retry-after"]) > 0


async def test_a_model_that_does_not_start_in_time_is_a_504(start_runtime, http):
    runtime = start_runtime(scripted_options([done_frame()], start_delay_ms=3000, variables={"START_TIMEOUT_MS": "500"}))
    response = await http.post(runtime.url + "/api/chat", json={"messages": USER})
    assert response.status_code == 504 and response.json()["error"]["code"] == "upstream_timeout"


# --- faults during the stream ---------------------------------------------------------


async def test_upstream_error_mid_stream_ends_with_generation_failed(start_runtime, http):
    runtime = start_runtime(scripted_options([native_frame("Hello"), sleep(100), error("internal detail 42")]))
    mark = len(runtime.lines)
    result = await chat(http, runtime.url)
    assert result.text == "Hello"
    assert result.terminal.name == "error" and result.terminal.data["code"] == "generation_failed"
    assert "internal detail" not in result.body.decode()
    assert result.names.count("error") == 1
    runtime.wait_for_record("chat_stream_failed", since=mark, code="generation_failed")


async def test_upstream_that_ends_without_done_is_reported_incomplete(start_runtime, http):
    runtime = start_runtime(scripted_options([native_frame("Hel"), native_frame("lo")]))
    result = await chat(http, runtime.url)
    assert result.text == "Hello"
    assert result.terminal.data["code"] == "upstream_incomplete"


async def test_malformed_frames_are_skipped_and_counted(start_runtime, http):
    runtime = start_runtime(scripted_options([native_frame("a"), send("data: {not json\n\n"), send("data: [1,2]\n\n"), native_frame("b"), usage_frame(5, 2), done_frame()]))
    result = await chat(http, runtime.url)
    assert result.text == "ab"
    assert result.terminal.name == "done" and result.terminal.data["skipped"] == 2


async def test_a_line_over_the_cap_ends_with_upstream_malformed_and_cancels_upstream(start_runtime, http):
    runtime = start_runtime(scripted_options([native_frame("a"), repeat(1100, "x" * 1024), done_frame()]))
    mark = len(runtime.lines)
    result = await chat(http, runtime.url)
    assert result.text == "a"
    assert result.terminal.data["code"] == "upstream_malformed"
    runtime.wait_for_record("chat_stream_failed", since=mark, code="upstream_malformed")


async def test_silence_brings_pings_then_an_idle_timeout_that_cancels_upstream(start_runtime, http):
    runtime = start_runtime(scripted_options([native_frame("a"), hang()], variables={"PING_INTERVAL_MS": "300", "IDLE_TIMEOUT_MS": "1500"}))
    mark = len(runtime.lines)
    result = await chat(http, runtime.url)
    assert result.text == "a"
    assert result.comments.count("ping") >= 3
    assert result.terminal.data["code"] == "upstream_timeout"
    runtime.wait_for_record("ai_upstream_cancelled", since=mark)
    runtime.wait_for_record("chat_stream_failed", since=mark, code="upstream_timeout")
    assert runtime.hung_reports() == []


async def test_invalid_utf8_from_upstream_becomes_replacement_characters(start_runtime, http):
    raw = b'data: {"response": "ok \xff\xfe"}\n\n'
    runtime = start_runtime(scripted_options([send_bytes(raw), done_frame()]))
    result = await chat(http, runtime.url)
    assert result.terminal.name == "done"
    assert result.text == "ok \ufffd\ufffd"
    passthrough = await chat(http, runtime.url, path="/api/chat/raw")
    assert passthrough.body == raw + b"data: [DONE]\n\n", "the raw route passes bytes through untouched"


async def test_only_the_streams_leading_byte_order_mark_is_dropped(start_runtime, http):
    bom = "\ufeff".encode()
    frame = b'data: {"response": "x\xef\xbb\xbfy"}\n\n'
    cut = frame.index(bom)
    steps = [
        send_bytes(bom[:2]), send_bytes(bom[2:] + bom),  # the leading BOM, split; a second one
        send_bytes(b'data: {"response": "ignored"}\n\n'),  # ...makes this line's field "\ufeffdata"
        send_bytes(frame[:cut]), send_bytes(frame[cut:]),  # U+FEFF in the text, at a chunk's start
        send_bytes(bom + b'data: {"response": "also ignored"}\n\n'),  # and at a line's start
        send_bytes(b'data: {"response": "\xef\xbb\xbf"}\n\n'), done_frame(),  # a token that is U+FEFF
    ]
    runtime = start_runtime(scripted_options(steps))
    result = await chat(http, runtime.url)
    assert result.terminal.name == "done"
    assert result.text == "x\ufeffy\ufeff"


# --- not buffered; concurrency; logs ---------------------------------------------------


async def test_first_delta_arrives_long_before_the_end(start_runtime, http):
    steps = []
    for i in range(10):
        steps += [native_frame(f"t{i} "), sleep(100)]
    runtime = start_runtime(scripted_options([*steps, usage_frame(5, 2), done_frame()]))
    result = await chat(http, runtime.url)
    first_delta = next(e for e in result.events if e.name == "delta")
    assert result.terminal.at - first_delta.at >= 0.7
    assert result.names.count("delta") == 10


async def test_fifty_concurrent_streams_each_get_exactly_their_own_content(start_runtime, http):
    runtime = start_runtime(scripted_options([sleep(100), echo(), sleep(100), echo(), usage_frame(5, 2), done_frame()]))
    mark = len(runtime.lines)
    secrets = [f"conversation {i} secret-{i * 7919}" for i in range(50)]
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=60)) as client:
        results = await asyncio.gather(*(chat(client, runtime.url, {"messages": [{"role": "user", "content": s}]}) for s in secrets))
    for secret, result in zip(secrets, results, strict=False):
        assert result.terminal.name == "done"
        assert result.text == secret * 2
    logged = "\n".join(runtime.own_lines(mark))
    assert not any(secret in logged for secret in secrets), "message text must never be logged"
    assert len(runtime.wait_for_count("chat_stream_completed", 50, since=mark)) == 50

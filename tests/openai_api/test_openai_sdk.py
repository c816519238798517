"""/v1/chat/completions and /v1/models read by the official `openai` Python package,
through the real runtime."""

from __future__ import annotations

import json

import openai
import pytest
from openai import AsyncOpenAI

from tests.harness.client import USER, chat
from tests.harness.runtime import BODY_LIMIT, LocalRuntime, RuntimeOptions
from tests.harness.scenarios import (
    done_frame,
    echo,
    error,
    hang,
    native_frame,
    script,
    scripted_options,
    sleep,
    usage_frame,
)
from tests.image_files import image_part, png

MODEL = "@cf/zai-org/glm-4.7-flash"  # wrangler.toml's MODEL
FALLBACK = "@cf/google/gemma-4-26b-a4b-it"  # and its FALLBACK_MODELS


def sdk(runtime: LocalRuntime, api_key: str = "any key works without AUTH_TOKEN") -> AsyncOpenAI:
    # No retries: each error must reach the test as the status the Worker sent.
    return AsyncOpenAI(base_url=runtime.url + "/v1", api_key=api_key, max_retries=0, timeout=30)


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


# One runtime answers every failure, chosen by the last user message; any other message
# gets its own text back, then usage and [DONE].
FAILURES = scripted_options(
    [echo(), usage_frame(3, 1), done_frame()],
    prompts={
        "rate limited": script(fail_start="3040: Capacity temporarily exceeded"),
        "unavailable": script(fail_start="5004: secret provider detail"),
        "retired": script(fail_start="5007: No such model secret provider detail or task"),
        "slow start": script([echo(), done_frame()], start_delay_ms=3000),
        "fails midway": script([native_frame("Hel"), sleep(50), native_frame("lo"), sleep(50), error("secret provider detail")]),
        "cut off": script([native_frame("Hel"), native_frame("lo")]),
        "goes silent": script([native_frame("Hel"), hang()]),
        "stop here": script([native_frame("Once upon"), native_frame(" a time. TH"), native_frame("E END and more"), hang()]),
    },
    variables={"START_TIMEOUT_MS": "1000", "IDLE_TIMEOUT_MS": "1500"},
)


# --- answers --------------------------------------------------------------------------


async def test_a_completion_is_the_emulators_answer_for_the_same_conversation(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    ours = await chat(http, runtime.url, {"messages": USER})
    completion = await sdk(runtime).chat.completions.create(model=MODEL, messages=USER)
    assert completion.object == "chat.completion" and completion.model == MODEL
    assert completion.id.startswith("chatcmpl-") and completion._request_id
    choice = completion.choices[0]
    assert choice.message.role == "assistant" and choice.message.content == ours.text and len(ours.text) > 0
    assert choice.finish_reason == "stop"
    usage = completion.usage
    assert usage is not None
    assert [usage.prompt_tokens, usage.completion_tokens, usage.total_tokens] == list(ours.terminal.data["usage"].values())


@pytest.mark.smoke
async def test_a_streamed_completion_has_the_role_first_then_deltas_then_finish_then_usage(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    ours = await chat(http, runtime.url, {"messages": USER})
    stream = await sdk(runtime).chat.completions.create(
        model=MODEL, messages=USER, stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]
    assert all(chunk.object == "chat.completion.chunk" and chunk.model == MODEL for chunk in chunks)
    assert len({chunk.id for chunk in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == ours.text
    finishes = [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices and chunk.choices[0].finish_reason]
    assert finishes == ["stop"] and chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == ours.terminal.data["usage"]["total_tokens"]


async def test_without_include_usage_no_usage_chunk_is_sent_and_max_tokens_cuts_with_length(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    stream = await sdk(runtime).chat.completions.create(model=MODEL, messages=USER, stream=True, max_completion_tokens=5)
    chunks = [chunk async for chunk in stream]
    assert all(chunk.choices for chunk in chunks) and all(chunk.usage is None for chunk in chunks)
    assert chunks[-1].choices[0].finish_reason == "length", "an answer cut at max_tokens never reads as complete"
    assert sum(1 for chunk in chunks if chunk.choices[0].delta.content) == 5


async def test_models_list_names_the_model_this_worker_serves(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    models = await sdk(runtime).models.list()
    assert [model.id for model in models.data] == [MODEL, FALLBACK]
    assert models.data[0].object == "model"


async def test_upstreams_in_openai_and_native_framing_give_the_same_chunks(start_runtime):
    async def read(options: RuntimeOptions) -> tuple[list[tuple[str | None, str | None]], dict | None]:
        # No thinking: the native framing has no reasoning to compare with.
        stream = await sdk(start_runtime(options)).chat.completions.create(
            model=MODEL, messages=USER, stream=True, stream_options={"include_usage": True}, max_tokens=40,
            extra_body={"reasoning_effort": "none"},
        )
        chunks = [chunk async for chunk in stream]
        pairs = [(c.choices[0].delta.content, c.choices[0].finish_reason) for c in chunks if c.choices]
        usage = chunks[-1].usage.model_dump(exclude={"prompt_tokens_details", "completion_tokens_details"}) if chunks[-1].usage else None
        return pairs, usage

    native = await read(RuntimeOptions(ai_pace=0, ai_format="native"))
    framed = await read(RuntimeOptions(ai_pace=0, ai_format="openai"))
    assert native == framed
    assert len(native[0]) > 10 and native[1] is not None


async def test_closing_the_stream_in_the_sdk_cancels_the_generation_upstream(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=40))
    mark = len(runtime.lines)
    stream = await sdk(runtime).chat.completions.create(model=MODEL, messages=USER, stream=True)
    request_id = stream.response.headers["x-request-id"]
    received = 0
    async for chunk in stream:
        received += bool(chunk.choices and chunk.choices[0].delta.content)
        if received == 2:
            break
    await stream.close()
    cancelled = runtime.wait_for_record("chat_stream_cancelled", since=mark, request_id=request_id)
    assert cancelled["route"] == "openai-chat"
    upstream = runtime.wait_for_record("ai_upstream_cancelled", since=mark)
    assert upstream["pulls"] < 20
    assert not any(r["event"] == "ai_upstream_finished" for r in runtime.records(mark))


async def test_stop_sequences_end_the_answer_before_them_even_split_across_frames(start_runtime):
    runtime = start_runtime(FAILURES)
    mark = len(runtime.lines)
    client = sdk(runtime)
    completion = await client.chat.completions.create(model=MODEL, messages=user("stop here"), stop=["THE END", "never"])
    assert completion.choices[0].message.content == "Once upon a time. "
    assert completion.choices[0].finish_reason == "stop"
    stream = await client.chat.completions.create(model=MODEL, messages=user("stop here"), stop="THE END", stream=True)
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Once upon a time. "
    assert chunks[-1].choices[0].finish_reason == "stop"
    # The upstream hangs after the stop sequence: only the stop ended these answers.
    assert len(runtime.wait_for_count("ai_upstream_cancelled", 2, since=mark)) == 2


async def test_a_client_system_message_is_accepted_and_content_parts_are_joined(start_runtime):
    runtime = start_runtime(FAILURES)
    messages = [
        {"role": "system", "content": "Answer in French."},
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "two"}, {"type": "text", "text": "parts"}], "name": "ann"},
    ]
    completion = await sdk(runtime).chat.completions.create(model=MODEL, messages=messages, user="someone@example.com")
    assert completion.choices[0].message.content == "two\nparts"  # the emulator echoes the last user message


# --- errors before the stream: the SDK's own exception classes ------------------------


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        pytest.param({"messages": []}, "messages", id="no-messages"),
        pytest.param({"messages": USER, "n": 2}, "n", id="n-over-1"),
        pytest.param({"messages": USER, "functions": [{"name": "f"}]}, "functions", id="legacy-functions"),
        pytest.param({"messages": USER, "response_format": {"type": "xml"}}, "response_format.type", id="unknown-response-format"),
        pytest.param({"messages": USER, "logprobs": True}, "logprobs", id="logprobs"),
        pytest.param({"messages": USER, "temperature": 9}, "temperature", id="temperature"),
        pytest.param({"messages": USER, "max_tokens": 10**40}, "max_tokens", id="max-tokens-many-digits"),
        pytest.param({"messages": USER, "stop": ["a", "b", "c", "d", "e"]}, "stop", id="five-stops"),
        pytest.param({"messages": [{"role": "tool", "content": "x", "tool_call_id": "t"}]}, "messages[0].tool_call_id",
                     id="tool-result-without-its-call"),
        pytest.param({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
                     "messages[0].content[0]", id="image-not-a-data-url"),
    ],
)
async def test_requests_that_cannot_be_honoured_raise_bad_request_naming_the_field(start_runtime, kwargs, param):
    runtime = start_runtime(FAILURES)
    mark = len(runtime.lines)
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk(runtime).chat.completions.create(model=MODEL, **kwargs)
    assert caught.value.status_code == 400 and caught.value.code == "invalid_request" and caught.value.param == param
    assert caught.value.type == "invalid_request_error" and caught.value.request_id
    assert not any(r["event"] == "ai_run" for r in runtime.records(mark))


async def test_an_unknown_model_is_not_found_in_openais_shape(start_runtime, http):
    runtime = start_runtime(FAILURES)
    with pytest.raises(openai.NotFoundError) as caught:
        await sdk(runtime).chat.completions.create(model="gpt-" + "9" * 5000, messages=USER)
    assert caught.value.code == "model_not_found" and caught.value.param == "model"
    assert "9999" not in caught.value.message
    missing = await http.get(runtime.url + "/v1/nothing")
    body = missing.json()["error"]
    assert missing.status_code == 404 and (body["code"], body["type"], body["param"]) == ("not_found", "invalid_request_error", None)


@pytest.mark.expected_errors("model_not_served")
@pytest.mark.parametrize(
    ("prompt", "exception", "status", "code"),
    [
        pytest.param("rate limited", openai.RateLimitError, 429, "model_busy", id="rate-limited"),
        pytest.param("unavailable", openai.InternalServerError, 502, "model_unavailable", id="unavailable"),
        pytest.param("retired", openai.InternalServerError, 502, "model_misconfigured", id="model-misconfigured"),
        pytest.param("slow start", openai.InternalServerError, 504, "upstream_timeout", id="start-timeout"),
    ],
)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_start_failures_raise_the_sdks_exception_for_their_status(start_runtime, prompt, exception, status, code, stream):
    runtime = start_runtime(FAILURES)
    with pytest.raises(exception) as caught:
        await sdk(runtime).chat.completions.create(model=MODEL, messages=user(prompt), stream=stream)
    assert caught.value.status_code == status and caught.value.code == code
    assert "secret" not in json.dumps(caught.value.body)
    if status == 429:
        assert caught.value.response.headers["retry-after"].isdigit()


async def test_a_wrong_api_key_is_an_authentication_error_and_the_right_one_works(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0, variables=(("AUTH_TOKEN", "s3cret"),)))
    with pytest.raises(openai.AuthenticationError) as caught:
        await sdk(runtime, api_key="wrong").chat.completions.create(model=MODEL, messages=USER)
    assert caught.value.code == "unauthorized"
    with pytest.raises(openai.AuthenticationError):
        await sdk(runtime, api_key="wrong").models.list()
    completion = await sdk(runtime, api_key="s3cret").chat.completions.create(model=MODEL, messages=USER, max_tokens=3)
    assert completion.choices[0].message.content


async def test_a_body_over_the_limit_is_413(start_runtime):
    runtime = start_runtime(FAILURES)
    with pytest.raises(openai.APIStatusError) as caught:
        await sdk(runtime).chat.completions.create(model=MODEL, messages=user("x" * (BODY_LIMIT + 1000)))
    assert caught.value.status_code == 413 and caught.value.code == "payload_too_large"


# --- failures after the answer started ------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "code"),
    [
        pytest.param("fails midway", "generation_failed", id="upstream-error"),
        pytest.param("cut off", "upstream_incomplete", id="no-done"),
        pytest.param("goes silent", "upstream_timeout", id="idle-timeout"),
    ],
)
async def test_a_stream_that_fails_after_it_started_raises_while_iterating(start_runtime, prompt, code):
    runtime = start_runtime(FAILURES)
    stream = await sdk(runtime).chat.completions.create(model=MODEL, messages=user(prompt), stream=True)
    text = []
    with pytest.raises(openai.APIError) as caught:
        async for chunk in stream:
            text.append(chunk.choices[0].delta.content or "")
    assert "".join(text).startswith("Hel")
    assert caught.value.code == code and "secret" not in str(caught.value.body)


@pytest.mark.parametrize(
    ("prompt", "status", "code"),
    [
        pytest.param("fails midway", 502, "generation_failed", id="upstream-error"),
        pytest.param("cut off", 502, "upstream_incomplete", id="no-done"),
        pytest.param("goes silent", 504, "upstream_timeout", id="idle-timeout"),
    ],
)
async def test_a_plain_completion_whose_stream_fails_is_an_error_never_a_partial_answer(start_runtime, prompt, status, code):
    runtime = start_runtime(FAILURES)
    with pytest.raises(openai.InternalServerError) as caught:
        await sdk(runtime).chat.completions.create(model=MODEL, messages=user(prompt))
    assert caught.value.status_code == status and caught.value.code == code
    assert "Hel" not in caught.value.response.text


# --- CORS -----------------------------------------------------------------------------


async def test_a_browser_preflight_for_the_js_sdks_own_headers_is_granted(start_runtime, http):
    runtime = start_runtime(FAILURES)
    asked = "authorization, content-type, x-stainless-os, x-stainless-retry-count"
    preflight = await http.options(runtime.url + "/v1/chat/completions", headers={
        "origin": "https://app.example", "access-control-request-method": "POST", "access-control-request-headers": asked})
    assert preflight.status_code == 204 and preflight.headers["access-control-allow-origin"] == "https://app.example"
    granted = {name.strip() for name in preflight.headers["access-control-allow-headers"].split(",")}
    assert {"authorization", "content-type", "x-stainless-os", "x-stainless-retry-count"} <= granted
    response = await http.post(runtime.url + "/v1/chat/completions", headers={"origin": "https://app.example"},
                               json={"model": MODEL, "messages": user("hello")})
    assert response.headers["access-control-allow-origin"] == "https://app.example"
    assert "x-request-id" in response.headers["access-control-expose-headers"]


# --- images (issue 30; docs/images.md) ---------------------------------------------------


async def test_an_image_streamed_and_collected_is_answered_by_the_vision_model_named_in_model(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0, ai_format=None))
    question = [{"role": "user", "content": [{"type": "text", "text": "What is this?"}, image_part(png(3, 2))]}]
    completion = await sdk(runtime).chat.completions.create(model=FALLBACK, messages=question)
    assert completion.model == FALLBACK and completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.content.startswith("I see a 3\u00d72 PNG.")
    stream = await sdk(runtime).chat.completions.create(model=FALLBACK, messages=question, stream=True)
    chunks = [chunk async for chunk in stream]
    assert {chunk.model for chunk in chunks} == {FALLBACK}
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices) == completion.choices[0].message.content
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk(runtime).chat.completions.create(model=MODEL, messages=question)
    assert refused.value.param == "messages[0].content[1]" and "does not take images" in refused.value.message

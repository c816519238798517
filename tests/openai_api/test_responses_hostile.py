"""Hostile requests to /v1/responses in the real runtime (its stack and memory limits): the
largest and deepest input, thousands of items, a huge `instructions`, tools of unknown
types, lone surrogates, paths of responses that were never stored. A clear 4xx each time
(or an answer, where the input is fine), no crash (the harness fails a test whose runtime
printed one), nothing of the request in the logs, and the Worker keeps serving."""

from __future__ import annotations

import json

import pytest

from tests.harness.runtime import BODY_LIMIT, wrangler_config
from tests.harness.scenarios import done_frame, native_frame, repeat, scripted_options

MODEL = "@cf/zai-org/glm-4.7-flash"
ANSWER = scripted_options([native_frame("ok"), done_frame()])
LIMITS = wrangler_config()


def deep(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = [value]
    return value


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": [{"type": "input_text", "text": text}]}


HOSTILE = [
    pytest.param({"input": [user("hi")] * (LIMITS.max_messages + 1)}, 400, "input", id="more-items-than-max-messages"),
    pytest.param({"input": [{"type": "reasoning", "id": "rs", "summary": []}] * 900 + [user("hi")]}, 200, None,
                 id="900-reasoning-items-left-out"),
    pytest.param({"input": "hi", "instructions": "i" * (LIMITS.input_chars_for(MODEL) + 1)}, 400, "input",
                 id="instructions-over-the-models-text"),
    pytest.param({"input": "hi", "metadata": {"k": deep(60)}}, 400, "metadata", id="deep-metadata"),
    pytest.param({"input": "hi", "metadata": {"k": deep(100)}}, 400, None, id="deeper-than-the-parser-allows"),
    pytest.param({"input": "hi", "tools": [{"type": "hologram"}]}, 400, "tools[0].type", id="unknown-tool-type"),
    pytest.param({"input": "hi", "tools": [{"type": "web_search"}, {"type": "file_search"}, {"type": "code_interpreter"}]}, 200, None,
                 id="hosted-tools-left-out"),
    pytest.param({"input": "hi", "tools": [{"type": "namespace", "name": "n" * 40, "description": "", "tools": [
        {"type": "function", "name": "f" * 40}]}]}, 400, "tools[0].tools[0].name", id="namespace-name-too-long-flattened"),
    pytest.param({"input": "hi", "tools": [{"type": "function", "name": "a__b"}, {"type": "namespace", "name": "a", "description": "",
                  "tools": [{"type": "function", "name": "b"}]}]}, 400, "tools[1].tools[0].name", id="namespace-collides-with-a-function"),
    pytest.param({"input": [user("hi"), {"type": "function_call_output", "call_id": "c", "output": "x"}]}, 400, "input[1].call_id",
                 id="an-output-without-its-call"),
    pytest.param({"input": [user("hi"), {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                            {"type": "function_call_output", "call_id": "c", "output": "x"},
                            {"type": "function_call_output", "call_id": "c", "output": "y"}]}, 400, "input[3].call_id",
                 id="a-call-answered-twice"),
    pytest.param({"input": [user("hi"), {"type": "item_reference", "id": "msg_1"}]}, 404, "input[1]", id="item-reference-to-nothing"),
    pytest.param({"input": "hi", "max_output_tokens": 10**300}, 400, "max_output_tokens", id="max-output-tokens-of-300-digits"),
    pytest.param({"input": "hi", "stream": "yes"}, 400, "stream", id="stream-not-a-boolean"),
    pytest.param({"input": "hi", "prompt_cache_key": "k" * 100_000}, 400, "prompt_cache_key", id="huge-cache-key"),
    pytest.param({"input": "hi", "include": ["reasoning.encrypted_content"] * 17}, 400, "include", id="include-of-17"),
]


@pytest.mark.parametrize(("fields", "status", "param"), HOSTILE)
async def test_hostile_requests_get_a_clear_answer_and_nothing_reaches_the_logs(start_runtime, http, fields, status, param):
    runtime = start_runtime(ANSWER)
    mark = len(runtime.lines)
    response = await http.post(runtime.url + "/v1/responses", json={"model": MODEL, **fields})
    assert response.status_code == status, response.text[:300]
    if status == 200:
        assert response.json()["output"][-1]["content"][0]["text"] == "ok"
    elif param is not None:
        assert response.json()["error"]["param"] == param
    runtime.wait_until_quiet()
    logged = "\n".join(runtime.own_lines(mark))
    assert "i" * 100 not in logged and "k" * 100 not in logged and len(logged) < 5000
    again = await http.post(runtime.url + "/v1/responses", json={"model": MODEL, "input": "hi"})
    assert again.status_code == 200 and not runtime.crash_lines(mark)


async def test_lone_surrogates_everywhere_are_answered_in_valid_utf8(start_runtime, http):
    runtime = start_runtime(ANSWER)
    lone = "\ud800 and \udfff"
    body = {"model": MODEL, "instructions": lone, "metadata": {"k": lone}, "prompt_cache_key": lone, "stream": True,
            "input": [{"role": "user", "content": lone}, {"role": "assistant", "content": lone}, user(lone)]}
    raw = json.dumps(body).encode()  # json.dumps writes them as \ud800 escapes: valid JSON, no valid UTF-8 behind it
    response = await http.post(runtime.url + "/v1/responses", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 200
    text = response.content.decode("utf-8")  # strict: the Worker never sends a lone surrogate raw
    assert text.rstrip().splitlines()[0] == "event: response.created" and "event: response.completed" in text


async def test_the_largest_body_allowed_is_answered_and_one_byte_more_is_413(start_runtime, http):
    runtime = start_runtime(ANSWER)
    mark = len(runtime.lines)

    def body_of(size: int) -> bytes:
        # One text item for Gemma 4 (the largest window served), padded to `size` bytes with
        # CJK text: 3 bytes a character, so that the text stays under the model's characters.
        head = json.dumps({"model": "@cf/google/gemma-4-26b-a4b-it", "input": [user("")]}).encode()
        room = size - len(head)
        filler = ("\u65e5" * (room // 3) + "w" * (room % 3)).encode()
        return head.replace(b'"text": ""', b'"text": "' + filler + b'"', 1)

    largest = await http.post(runtime.url + "/v1/responses", content=body_of(BODY_LIMIT), headers={"content-type": "application/json"})
    assert largest.status_code == 200, largest.text[:300]
    over = await http.post(runtime.url + "/v1/responses", content=body_of(BODY_LIMIT + 1), headers={"content-type": "application/json"})
    assert over.status_code == 413 and over.json()["error"]["code"] == "payload_too_large"
    assert not runtime.crash_lines(mark)


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/v1/responses/resp_123"), ("DELETE", "/v1/responses/resp_123"), ("POST", "/v1/responses/resp_123/cancel"),
    ("GET", "/v1/responses/resp_123/input_items"), ("GET", "/v1/responses/resp_123/cancel"), ("POST", "/v1/responses/a/b/cancel"),
])
async def test_paths_of_responses_never_stored_are_openais_404_or_405(start_runtime, http, method, path):
    runtime = start_runtime(ANSWER)
    response = await http.request(method, runtime.url + path)
    assert response.status_code in (404, 405) and response.json()["error"]["type"] == "invalid_request_error"
    assert (response.status_code == 405) == (path.endswith("/cancel") and method == "GET")


async def test_get_on_responses_itself_is_a_405_naming_post(start_runtime, http):
    runtime = start_runtime(ANSWER)
    response = await http.get(runtime.url + "/v1/responses")
    assert response.status_code == 405 and response.headers["allow"] == "POST, OPTIONS"


ENDLESS = scripted_options([native_frame("a"), repeat(40, 'data: {"response":"' + "\u00e9" * 60_000 + '"}\n\n'), done_frame()])


async def test_an_answer_longer_than_a_response_may_hold_ends_failed_and_the_isolate_lives(start_runtime, http):
    # The attack of issue 31: the terminal events repeat the answer, so a streamed response
    # holds it; uncapped, 36 M characters ran workerd out of heap. 2.4 M characters are sent here.
    runtime = start_runtime(ENDLESS)
    mark = len(runtime.lines)
    async with http.stream("POST", runtime.url + "/v1/responses", json={"model": MODEL, "input": "hi", "stream": True}) as response:
        text = (await response.aread()).decode()
    kinds = [line[7:] for line in text.splitlines() if line.startswith("event: ")]
    assert kinds[-2:] == ["error", "response.failed"] and '"code":"upstream_malformed"' in text
    collected = await http.post(runtime.url + "/v1/responses", json={"model": MODEL, "input": "hi"})
    assert collected.status_code == 502 and collected.json()["error"]["code"] == "upstream_malformed"
    assert not runtime.crash_lines(mark)

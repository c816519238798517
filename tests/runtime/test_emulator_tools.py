"""The Workers AI emulator's tool calls in the real runtime (ai_emulator/tools.js).

Two ways in: a small JS probe Worker (served with --main, the same AI service binding)
that hands `{model, inputs}` to `env.AI.run` as they are, so the emulator's own checks
(8001) and non-streamed answers are reachable whatever the chat Worker validates first;
and POST /api/chat/raw, which passes the model's bytes through, for what the chat Worker
actually sends. The rule for when the fake model calls a tool is the emulator's own
(docs/emulator.md); the stream shapes are those of the 2026-02-17 Workers
AI changelog and workers-ai-provider 4.0.0's fixtures.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from tests.harness.runtime import LocalRuntime, RuntimeOptions
from tests.runtime.test_catalog import sse_payloads

GLM = "@cf/zai-org/glm-4.7-flash"  # wrangler.toml's MODEL: OpenAI framing, thinks first
LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"  # native framing, tool calling
GRANITE = "@cf/ibm-granite/granite-4.0-h-micro"  # no tool calling in the catalog

TOOL_ID = re.compile(r"^chatcmpl-tool-[0-9a-f]{16}$")

PROBE_WORKER = """\
// Test probe: env.AI.run(model, inputs) as given; the stream passed through, an object as
// {"result": ...}, a failure as {"error": message} with status 502.
export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname === "/health") return Response.json({ status: "ok" });
    const { model, inputs } = await request.json();
    try {
      const result = await env.AI.run(model, inputs, {});
      if (result instanceof ReadableStream) return new Response(result, { headers: { "content-type": "text/event-stream" } });
      return Response.json({ result });
    } catch (error) {
      return Response.json({ error: String(error?.message ?? error) }, { status: 502 });
    }
  },
};
"""

TIME = {"type": "function", "function": {
    "name": "current_time", "description": "The current time in a timezone.",
    "parameters": {"type": "object", "properties": {
        "timezone": {"type": "string", "examples": ["UTC"]},
        "format": {"type": "string"},
    }, "required": ["timezone"]},
}}
WEATHER = {"type": "function", "function": {
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "enum": ["東京", "Paris"]},
        "days": {"type": "integer", "default": 3},
        "metric": {"type": "boolean"},
        "hours": {"type": "array"},
    }},
}}
# The flat shape native models take.
FLAT_LOOKUP = {"name": "lookup_order", "description": "An order by number.",
               "parameters": {"type": "object", "properties": {"number": {"type": "integer"}}}}
TOOLS = [TIME, WEATHER]
TIME_ARGS = {"timezone": "UTC"}
WEATHER_ARGS = {"city": "東京", "days": 3, "metric": True, "hours": []}
ASK_BOTH = [{"role": "user", "content": "What TIME is it in Tokyo, and what's the weather like?"}]
ASK_NOTHING = [{"role": "user", "content": "Hello there"}]

RAW_OPENAI = RuntimeOptions(ai_format=None, ai_pace=0)  # each model its own framing: GLM's is OpenAI's
RAW_NATIVE = RuntimeOptions(ai_pace=0)  # every model in native frames


@pytest.fixture(scope="session")
def probe_options(tmp_path_factory: pytest.TempPathFactory) -> RuntimeOptions:
    path = tmp_path_factory.mktemp("emulator-probe") / "probe.js"
    path.write_text(PROBE_WORKER, encoding="utf-8")
    return RuntimeOptions(ai_format=None, ai_pace=0, main=str(path))


# --- reading streams ------------------------------------------------------------------------

def check_openai_tool_stream(body: bytes, names: list[str]) -> list[dict[str, Any]]:
    """Check an OpenAI-framed stream of tool calls chunk by chunk; return the calls
    ({"index", "id", "name", "arguments"}) with their arguments joined."""
    payloads = sse_payloads(body)
    assert payloads[-1] == "[DONE]" and payloads.count("[DONE]") == 1
    chunks = payloads[:-1]
    assert chunks[-1]["choices"] == [] and "finish_reason" not in json.dumps(chunks[-1]), "the usage chunk has no choices"
    finish = chunks[-2]["choices"][0]
    assert finish["finish_reason"] == "tool_calls" and finish["delta"] == {}
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-2]), "finish_reason only on the finish chunk"
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert len({c["id"] for c in chunks}) == 1 and all(c["object"] == "chat.completion.chunk" for c in chunks)

    calls: list[dict[str, Any]] = []
    thoughts = fragments = 0
    previous = 0
    for chunk in chunks[1:-2]:
        delta = chunk["choices"][0]["delta"]
        completion = chunk["usage"]["completion_tokens"]
        assert "content" not in delta, "a turn that calls tools writes no text"
        if "reasoning_content" in delta:
            assert not calls, "thinking comes before the calls"
            thoughts += 1
            assert completion == previous + 1
        else:
            [part] = delta["tool_calls"]
            if "id" in part:
                assert part["index"] == len(calls), "calls are indexed 0, 1, ... in order"
                assert TOOL_ID.match(part["id"]) and part["type"] == "function"
                assert part["function"]["arguments"] == ""
                calls.append({"index": part["index"], "id": part["id"], "name": part["function"]["name"], "arguments": ""})
                assert completion == previous
            else:
                assert set(part) == {"index", "function"} and set(part["function"]) == {"arguments"}
                assert calls and part["index"] == calls[-1]["index"], "a fragment continues the call started last"
                fragment = part["function"]["arguments"]
                assert 1 <= len(fragment) <= 8
                calls[-1]["arguments"] += fragment
                fragments += 1
                assert completion == previous + 1, "each fragment is a completion token"
        previous = completion
    assert thoughts > 0, "GLM thinks first"
    usage = chunks[-1]["usage"]
    assert usage["completion_tokens"] == thoughts + fragments == chunks[-2]["usage"]["completion_tokens"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert [call["name"] for call in calls] == names
    assert len({call["id"] for call in calls}) == len(calls), "each call its own id"
    return calls


def check_native_tool_stream(body: bytes) -> list[dict[str, Any]]:
    """Check a native stream of tool calls; return its calls ({"name", "arguments": object})."""
    payloads = sse_payloads(body)
    assert len(payloads) == 3 and payloads[-1] == "[DONE]", payloads
    frame, usage = payloads[0], payloads[1]
    assert set(frame) == {"response", "tool_calls", "p"} and frame["response"] == ""
    assert usage["response"] == "" and set(usage["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert "finish_reason" not in body.decode(), "native streams carry no finish_reason"
    for call in frame["tool_calls"]:
        assert set(call) == {"name", "arguments"} and isinstance(call["arguments"], dict)
    return frame["tool_calls"]


def runs(runtime: LocalRuntime, since: int, count: int = 1) -> list[dict[str, Any]]:
    """The emulator's `ai_run` records since `since`, once `count` of them have arrived
    (log lines are read asynchronously: the response can come first)."""
    return runtime.wait_for_count("ai_run", count, since=since)


async def probe(http: httpx.AsyncClient, runtime: LocalRuntime, model: str, **inputs: Any) -> httpx.Response:
    return await http.post(runtime.url + "/probe", json={"model": model, "inputs": inputs})


def openai_text(body: bytes) -> str:
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in sse_payloads(body)[:-1] if c["choices"])


# --- the emulator itself, through the probe ---------------------------------------------

async def test_an_openai_framed_model_streams_its_calls_as_vllm_does(start_runtime, http, probe_options):
    runtime = start_runtime(probe_options)
    since = len(runtime.lines)
    response = await probe(http, runtime, GLM, messages=ASK_BOTH, tools=TOOLS, stream=True)
    assert response.status_code == 200, response.text
    calls = check_openai_tool_stream(response.content, ["current_time", "get_weather"])
    assert [json.loads(call["arguments"]) for call in calls] == [TIME_ARGS, WEATHER_ARGS]

    again = await probe(http, runtime, GLM, messages=ASK_BOTH, tools=TOOLS, stream=True)
    assert check_openai_tool_stream(again.content, ["current_time", "get_weather"]) == calls, "seeded by the conversation"
    turn_two = [*ASK_BOTH, {"role": "assistant", "content": "Sure."}, *ASK_BOTH]
    other = check_openai_tool_stream((await probe(http, runtime, GLM, messages=turn_two, tools=TOOLS, stream=True)).content,
                                     ["current_time", "get_weather"])
    assert {call["id"] for call in other}.isdisjoint(call["id"] for call in calls), "another conversation, other ids"

    run = runs(runtime, since)[0]
    assert run["tools"] == ["current_time", "get_weather"] and run["history"] == [{"role": "user"}]
    assert "Tokyo" not in "\n".join(runtime.own_lines(since)), "no message text in the log"


async def test_a_native_model_streams_whole_calls_in_one_frame(start_runtime, http, probe_options):
    runtime = start_runtime(probe_options)
    response = await probe(http, runtime, LLAMA, messages=ASK_BOTH, tools=[FLAT_LOOKUP, *TOOLS], stream=True)
    assert response.status_code == 200, response.text
    assert check_native_tool_stream(response.content) == [
        {"name": "current_time", "arguments": TIME_ARGS}, {"name": "get_weather", "arguments": WEATHER_ARGS},
    ]


async def test_answers_that_are_not_streamed_carry_the_whole_calls(start_runtime, http, probe_options):
    runtime = start_runtime(probe_options)
    collected = (await probe(http, runtime, GLM, messages=ASK_BOTH, tools=TOOLS)).json()["result"]
    [choice] = collected["choices"]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    calls = choice["message"]["tool_calls"]
    assert [(c["type"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [
        ("function", "current_time", TIME_ARGS), ("function", "get_weather", WEATHER_ARGS),
    ]
    streamed = check_openai_tool_stream((await probe(http, runtime, GLM, messages=ASK_BOTH, tools=TOOLS, stream=True)).content,
                                        ["current_time", "get_weather"])
    assert [c["id"] for c in calls] == [c["id"] for c in streamed], "the same ids streamed or not"

    native = (await probe(http, runtime, LLAMA, messages=ASK_BOTH, tools=TOOLS)).json()["result"]
    assert native["response"] == "" and native["tool_calls"] == [
        {"name": "current_time", "arguments": TIME_ARGS}, {"name": "get_weather", "arguments": WEATHER_ARGS},
    ]


@pytest.mark.parametrize(("choice", "parallel", "messages", "called"), [
    pytest.param(None, None, ASK_NOTHING, [], id="auto-no-name-word-mentioned"),
    pytest.param("none", None, ASK_BOTH, [], id="none"),
    pytest.param("required", None, ASK_NOTHING, ["lookup_order"], id="required-falls-back-to-the-first-tool"),
    pytest.param({"type": "function", "function": {"name": "get_weather"}}, None, ASK_NOTHING, ["get_weather"], id="named"),
    pytest.param("auto", False, ASK_BOTH, ["current_time"], id="parallel-false-only-the-first"),
    pytest.param(None, None, [{"role": "user", "content": "an ORDER please"}], ["lookup_order"], id="any-case"),
])
async def test_when_the_fake_model_calls_which_tools(start_runtime, http, probe_options, choice, parallel, messages, called):
    runtime = start_runtime(probe_options)
    inputs: dict[str, Any] = {"messages": messages, "tools": [FLAT_LOOKUP, *TOOLS], "max_tokens": 200}
    if choice is not None:
        inputs["tool_choice"] = choice
    if parallel is not None:
        inputs["parallel_tool_calls"] = parallel
    result = (await probe(http, runtime, GLM, **inputs)).json()["result"]
    calls = result["choices"][0]["message"].get("tool_calls", [])
    assert [call["function"]["name"] for call in calls] == called
    if not called:
        assert result["choices"][0]["finish_reason"] != "tool_calls" and result["choices"][0]["message"]["content"]


async def test_after_a_tool_result_the_reply_quotes_it_and_the_log_shows_the_conversations_shape(start_runtime, http, probe_options):
    runtime = start_runtime(probe_options)
    result_text = "It is 12:00 in Tokyo, a sunny day with a light breeze from the sea and 24 degrees."
    messages = [
        *ASK_BOTH,
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "current_time", "arguments": '{"timezone":"UTC"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "call_a", "name": "current_time", "content": result_text},
    ]
    since = len(runtime.lines)
    for model, stream in ((GLM, True), (LLAMA, True), (GLM, False)):
        response = await probe(http, runtime, model, messages=messages, tools=TOOLS, tool_choice="required", stream=stream)
        if not stream:
            text = response.json()["result"]["choices"][0]["message"]["content"]
        elif model == GLM:
            text = openai_text(response.content)
            assert "tool_calls" not in response.text, "no call answers a tool result"
        else:
            text = "".join(p.get("response") or "" for p in sse_payloads(response.content)[:-1])
        assert text.startswith("Tool result: " + result_text[:60]) and len(text) > len("Tool result: ") + 60, model
    assert runs(runtime, since)[0]["history"] == [
        {"role": "user"},
        {"role": "assistant", "tool_calls": [{"id": "call_a", "name": "current_time"}, {"id": "call_b", "name": "get_weather"}]},
        {"role": "tool", "tool_call_id": "call_a"},
    ]
    assert runs(runtime, since)[0]["settings"]["tool_choice"] == "required"
    assert "sunny" not in "\n".join(runtime.own_lines(since)), "no tool result in the log"


@pytest.mark.parametrize(("model", "inputs"), [
    pytest.param(GLM, {"tools": TOOLS, "tool_choice": "any"}, id="tool-choice-any"),
    pytest.param(GLM, {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "not_given"}}}, id="named-unknown"),
    pytest.param(GLM, {"tool_choice": "auto"}, id="tool-choice-without-tools"),
    pytest.param(GLM, {"tools": TOOLS, "parallel_tool_calls": "yes"}, id="parallel-not-a-boolean"),
    pytest.param(GLM, {"tools": {"current_time": TIME}}, id="tools-not-a-list"),
    pytest.param(GLM, {"tools": [{"type": "function", "function": {"name": "x", "description": False}}]}, id="description-false"),
    pytest.param(GLM, {"tools": [{"type": "tool", "function": {"name": "x"}}]}, id="not-a-function-tool"),
    pytest.param(GLM, {"tools": [{"parameters": {}}]}, id="flat-without-a-name"),
    pytest.param(GRANITE, {"tools": TOOLS}, id="model-without-tool-calling"),
])
async def test_tool_inputs_the_binding_refuses_are_8001(start_runtime, http, probe_options, model, inputs):
    runtime = start_runtime(probe_options)
    since = len(runtime.lines)
    response = await probe(http, runtime, model, messages=ASK_BOTH, stream=True, **inputs)
    assert response.status_code == 502 and "8001: Invalid input" in response.json()["error"]
    [run] = runs(runtime, since)
    assert run["refused"] == "8001"


async def test_a_call_the_token_budget_cuts_short_ends_with_length(start_runtime, http, probe_options):
    runtime = start_runtime(probe_options)
    # GLM thinks 24 tokens by default; one more is one fragment (at most 8 characters) of
    # the first call's arguments.
    response = await probe(http, runtime, GLM, messages=ASK_BOTH, tools=TOOLS, max_tokens=25, stream=True)
    chunks = sse_payloads(response.content)[:-1]
    assert chunks[-2]["choices"][0]["finish_reason"] == "length" and chunks[-1]["usage"]["completion_tokens"] == 25
    arguments = "".join(c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                        for c in chunks if c["choices"] and "tool_calls" in c["choices"][0]["delta"])
    assert arguments and not arguments.endswith("}")


# --- what the chat Worker sends, through /api/chat/raw ------------------------------------

async def test_the_raw_route_streams_the_default_models_tool_calls(start_runtime, http):
    runtime = start_runtime(RAW_OPENAI)
    since = len(runtime.lines)
    response = await http.post(runtime.url + "/api/chat/raw", json={"messages": ASK_BOTH, "tools": TOOLS})
    assert response.status_code == 200, response.text
    calls = check_openai_tool_stream(response.content, ["current_time", "get_weather"])
    assert [json.loads(call["arguments"]) for call in calls] == [TIME_ARGS, WEATHER_ARGS]
    [run] = runs(runtime, since)
    assert run["model"] == GLM and run["tools"] == ["current_time", "get_weather"]


async def test_the_raw_route_streams_native_tool_calls(start_runtime, http):
    runtime = start_runtime(RAW_NATIVE)
    response = await http.post(runtime.url + "/api/chat/raw",
                               json={"messages": ASK_BOTH, "tools": TOOLS, "tool_choice": "auto", "parallel_tool_calls": False})
    assert response.status_code == 200, response.text
    assert check_native_tool_stream(response.content) == [{"name": "current_time", "arguments": TIME_ARGS}]


async def test_the_raw_route_never_streams_an_answer_for_tool_choice_any(start_runtime, http):
    runtime = start_runtime(RAW_OPENAI)
    since = len(runtime.lines)
    response = await http.post(runtime.url + "/api/chat/raw", json={"messages": ASK_BOTH, "tools": TOOLS, "tool_choice": "any"})
    # The Worker refuses it itself (400), or the binding does (8001, a failed start).
    assert response.status_code in (400, 502) and "error" in response.json()
    runtime.wait_until_quiet()
    assert all(run.get("refused") == "8001" for run in runs(runtime, since, count=0))


async def test_the_raw_route_brings_a_tool_result_back_to_the_model(start_runtime, http):
    runtime = start_runtime(RAW_OPENAI)
    first = await http.post(runtime.url + "/api/chat/raw", json={"messages": ASK_BOTH, "tools": TOOLS})
    [call, _] = check_openai_tool_stream(first.content, ["current_time", "get_weather"])
    result_text = "12:00 JST, sunny"
    messages = [
        *ASK_BOTH,
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}},
        ]},
        {"role": "tool", "tool_call_id": call["id"], "content": result_text},
    ]
    since = len(runtime.lines)
    second = await http.post(runtime.url + "/api/chat/raw", json={"messages": messages, "tools": TOOLS})
    assert second.status_code == 200, second.text
    assert openai_text(second.content).startswith("Tool result: " + result_text)
    [run] = runs(runtime, since)
    assert run["history"][-3:] == [  # after the Worker's system message
        {"role": "user"},
        {"role": "assistant", "tool_calls": [{"id": call["id"], "name": "current_time"}]},
        {"role": "tool", "tool_call_id": call["id"]},
    ], "the emulator's own id came back unchanged"

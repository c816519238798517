"""Tool calls on /v1/chat/completions, read by the `openai` Python package and by
LangChain's ChatOpenAI, through the real runtime: upstream streams shaped as Workers AI
streams them (scripted), the emulator's own calls for the round trip, and hostile cases."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.harness.runtime import RuntimeOptions
from tests.harness.scenarios import done_frame, native_frame, repeat, script, scripted_options, send, usage_frame
from tests.openai_api.test_openai_sdk import MODEL, sdk, user

TOOLS = [
    {"type": "function", "function": {
        "name": "current_time", "description": "The current time in an IANA time zone.",
        "parameters": {"type": "object", "properties": {"timezone": {"type": "string", "examples": ["UTC"]}},
                       "required": ["timezone"]},
    }},
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }},
]


def chunk(delta: dict[str, Any], tokens: int, finish: str | None = None, *, choices: bool = True) -> str:
    """A chunk as Workers AI streams it for OpenAI-style models: compact, running usage."""
    body: dict[str, Any] = {"id": "chatcmpl-9f", "object": "chat.completion.chunk", "created": 1764000000, "model": MODEL,
                            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}] if choices else [],
                            "usage": {"prompt_tokens": 30, "completion_tokens": tokens, "total_tokens": 30 + tokens}}
    return "data: " + json.dumps(body, separators=(",", ":")) + "\n\n"


def call_start(index: int, call_id: str, name: str, tokens: int) -> str:
    return chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                  "function": {"name": name, "arguments": ""}}]}, tokens)


def call_arguments(index: int, text: str, tokens: int) -> str:
    return chunk({"tool_calls": [{"index": index, "function": {"arguments": text}}]}, tokens)


def ending(tokens: int) -> list[str]:
    return [chunk({"content": ""}, tokens, "tool_calls"), chunk({}, tokens, choices=False), "data: [DONE]\n\n"]


ONE_CALL = [chunk({"role": "assistant", "content": ""}, 0), call_start(0, "chatcmpl-tool-a1", "current_time", 1),
            call_arguments(0, '{"timez', 2), call_arguments(0, 'one": "UTC"}', 3), *ending(3)]
PARALLEL = [chunk({"role": "assistant", "content": ""}, 0),
            call_start(0, "chatcmpl-tool-a1", "current_time", 1), call_arguments(0, '{"timezone": "UTC"}', 2),
            call_start(1, "chatcmpl-tool-b2", "get_weather", 3), call_arguments(1, '{"city": ', 4),
            call_arguments(1, '"Paris"}', 5), *ending(5)]
TEXT_THEN_CALL = [chunk({"role": "assistant", "content": ""}, 0), chunk({"content": "Let me look "}, 1),
                  chunk({"content": "that up."}, 2), call_start(0, "chatcmpl-tool-a1", "get_weather", 3),
                  call_arguments(0, '{"city": "Oslo"}', 4), *ending(4)]
NATIVE = ['data: {"response":"","tool_calls":[{"name":"get_weather","arguments":{"city":"Lima"}}],"p":"abc"}\n\n',
          'data: {"response":"","usage":{"prompt_tokens":30,"completion_tokens":8,"total_tokens":38}}\n\n', "data: [DONE]\n\n"]
ID_CHANGES = [call_start(0, "call-one", "get_weather", 1), call_arguments(0, '{"city": "Rome"}', 2),
              chunk({"tool_calls": [{"index": 0, "id": "call-two", "type": "function",
                                     "function": {"name": "current_time", "arguments": '{"timezone": "CET"}'}}]}, 3),
              *ending(3)]
MEGABYTES = [call_start(0, "chatcmpl-tool-big", "get_weather", 1), call_arguments(0, '{"city": "', 2)]
INDEXES = "".join(call_start(i, f"chatcmpl-tool-{i}", "get_weather", i + 1) for i in range(3000))


def steps(frames: list[str]) -> list[dict[str, Any]]:
    return [send(frame) for frame in frames]


SCRIPTED = scripted_options(
    [native_frame("unscripted"), usage_frame(3, 1), done_frame()],
    prompts={
        "one call": script(steps(ONE_CALL)),
        "parallel calls": script(steps(PARALLEL)),
        "text then a call": script(steps(TEXT_THEN_CALL)),
        "native call": script(steps(NATIVE)),
        "the id changes": script(steps(ID_CHANGES)),
        "megabytes of arguments": script([*steps(MEGABYTES), repeat(48, call_arguments(0, "x" * 65_536, 3)), *steps(ending(3))]),
        "thousands of indexes": script([send(INDEXES), *steps(ending(3000))]),
    },
)


async def streamed(client: openai.AsyncOpenAI, prompt: str, **extra: Any) -> tuple[list[Any], dict[int, dict[str, Any]]]:
    """The chunks of a streamed answer and its calls rebuilt by index, as OpenAI's docs
    tell a client to: the first fragment's id and name, then the arguments appended."""
    stream = await client.chat.completions.create(model=MODEL, messages=user(prompt), tools=TOOLS, stream=True, **extra)
    chunks = [c async for c in stream]
    calls: dict[int, dict[str, Any]] = {}
    for c in chunks:
        for call in (c.choices[0].delta.tool_calls or []) if c.choices else []:
            entry = calls.setdefault(call.index, {"id": None, "name": None, "arguments": ""})
            if call.id:
                assert entry["id"] is None, "only a call's first fragment carries its id"
                entry["id"], entry["name"] = call.id, call.function.name
            entry["arguments"] += call.function.arguments or ""
    return chunks, calls


def finish_reasons(chunks: list[Any]) -> list[str]:
    return [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]


@pytest.mark.parametrize(
    ("prompt", "expected", "text"),
    [
        ("one call", {0: ("chatcmpl-tool-a1", "current_time", {"timezone": "UTC"})}, ""),
        ("parallel calls", {0: ("chatcmpl-tool-a1", "current_time", {"timezone": "UTC"}),
                            1: ("chatcmpl-tool-b2", "get_weather", {"city": "Paris"})}, ""),
        ("text then a call", {0: ("chatcmpl-tool-a1", "get_weather", {"city": "Oslo"})}, "Let me look that up."),
        ("native call", {0: (None, "get_weather", {"city": "Lima"})}, ""),
        ("the id changes", {0: ("call-one", "get_weather", {"city": "Rome"}), 1: ("call-two", "current_time", {"timezone": "CET"})}, ""),
    ],
)
async def test_streamed_and_collected_calls_read_by_the_openai_sdk(start_runtime, prompt, expected, text):
    runtime = start_runtime(SCRIPTED)
    client = sdk(runtime)
    chunks, calls = await streamed(client, prompt)
    assert finish_reasons(chunks) == ["tool_calls"]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    assert sorted(calls) == sorted(expected)
    for index, (call_id, name, arguments) in expected.items():
        got = calls[index]
        # The model's ids pass through; a native call (none upstream) gets the Worker's own.
        assert got["id"] == call_id if call_id is not None else got["id"].startswith("call_")
        assert got["name"] == name and json.loads(got["arguments"]) == arguments

    completion = await client.chat.completions.create(model=MODEL, messages=user(prompt), tools=TOOLS)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == (text or None)
    collected = choice.message.tool_calls or []
    assert [(c.function.name, json.loads(c.function.arguments)) for c in collected] == [
        (name, arguments) for _, name, arguments in (expected[i] for i in sorted(expected))
    ]
    assert all(c.type == "function" for c in collected)


@pytest.mark.parametrize("prompt", ["megabytes of arguments", "thousands of indexes"])
async def test_calls_over_a_bound_end_the_answer_with_one_clean_error_and_the_worker_keeps_serving(start_runtime, prompt):
    runtime = start_runtime(SCRIPTED)
    client = sdk(runtime)
    with pytest.raises(openai.APIError) as raised:
        await streamed(client, prompt)
    assert raised.value.code == "tool_calls_too_large"
    with pytest.raises(openai.InternalServerError) as collected:
        await client.chat.completions.create(model=MODEL, messages=user(prompt), tools=TOOLS)
    assert collected.value.code == "tool_calls_too_large" and collected.value.status_code == 502
    # One clean failure each, logged with its code; nothing crashed, and the next answer is whole.
    runtime.wait_for_record("chat_stream_failed", code="tool_calls_too_large")
    assert runtime.crash_lines() == []
    _, calls = await streamed(client, "one call")
    assert calls[0]["name"] == "current_time"


def deep_schema(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


@pytest.mark.parametrize(
    ("tools", "param"),
    [
        ([{"type": "function", "function": {"name": "f", "parameters": deep_schema(20)}}], "tools[0].function.parameters"),
        ([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "description": "x" * 20_000}}}],
         "tools[0].function.parameters"),
        ([{"type": "function", "function": {"name": f"f{i}", "parameters": {"type": "object"}}} for i in range(65)], "tools"),
        ([{"type": "function", "function": {"name": "no spaces"}}], "tools[0].function.name"),
        ([{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}], "tools[1].function.name"),
    ],
    ids=["deep-schema", "huge-schema", "too-many-tools", "bad-name", "duplicate-name"],
)
async def test_tools_over_a_bound_are_a_400_naming_the_field(start_runtime, tools, param):
    client = sdk(start_runtime(SCRIPTED))
    with pytest.raises(openai.BadRequestError) as raised:
        await client.chat.completions.create(model=MODEL, messages=user("one call"), tools=tools)
    assert raised.value.code == "invalid_request"
    assert raised.value.param == param


async def test_tool_choice_any_is_refused_with_a_pointer_to_required(start_runtime):
    client = sdk(start_runtime(SCRIPTED))
    with pytest.raises(openai.BadRequestError) as raised:
        await client.chat.completions.create(model=MODEL, messages=user("one call"), tools=TOOLS, tool_choice="any")  # type: ignore[arg-type]
    assert raised.value.param == "tool_choice" and "required" in str(raised.value.message)


# --- the round trip, with the emulator's own calls ------------------------------------------


async def test_the_round_trip_keeps_the_models_ids_and_the_result_reaches_the_model(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0, ai_format=None))
    client = sdk(runtime)
    question = user("What is the current time in UTC?")
    stream = await client.chat.completions.create(model=MODEL, messages=question, tools=TOOLS, stream=True)
    chunks = [c async for c in stream]
    first = [call for c in chunks if c.choices for call in (c.choices[0].delta.tool_calls or []) if call.id]
    assert [(call.function.name, call.index) for call in first] == [("current_time", 0)]
    call_id = first[0].id
    arguments = "".join(call.function.arguments or "" for c in chunks if c.choices for call in (c.choices[0].delta.tool_calls or []))
    assert json.loads(arguments) == {"timezone": "UTC"}

    history = [
        *question,
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "current_time", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": call_id, "content": "2026-12-01T09:30:00Z"},
    ]
    since = len(runtime.lines)
    answer = await client.chat.completions.create(model=MODEL, messages=history, tools=TOOLS)
    assert answer.choices[0].finish_reason == "stop"
    assert (answer.choices[0].message.content or "").startswith("Tool result: 2026-12-01T09:30:00Z")
    # What reached the binding: the call with the model's own id, and its result.
    run = runtime.wait_for_record("ai_run", since=since)
    assert {"role": "assistant", "tool_calls": [{"id": call_id, "name": "current_time"}]} in run["history"]
    assert {"role": "tool", "tool_call_id": call_id} in run["history"]
    assert run["tools"] == ["current_time", "get_weather"]


async def test_langchain_chat_openai_with_bound_tools_streams_the_call(start_runtime):
    from langchain_core.messages import AIMessageChunk, HumanMessage, ToolMessage
    from langchain_openai import ChatOpenAI

    runtime = start_runtime(RuntimeOptions(ai_pace=0, ai_format=None))
    model = ChatOpenAI(model=MODEL, base_url=runtime.url + "/v1", api_key="unused", max_retries=0, timeout=30)
    bound = model.bind_tools([TOOLS[0]])
    question = HumanMessage("What is the current time in UTC?")
    merged: AIMessageChunk | None = None
    pieces = 0
    async for piece in bound.astream([question]):
        assert isinstance(piece, AIMessageChunk)
        merged = piece if merged is None else merged + piece
        pieces += 1
    assert merged is not None and pieces > 3  # streamed, not one block
    assert [(call["name"], call["args"]) for call in merged.tool_calls] == [("current_time", {"timezone": "UTC"})]
    call = merged.tool_calls[0]
    assert call["id"] and call["id"].startswith("chatcmpl-tool-")
    # LangChain's own history shapes (an AI message with empty content and its calls, then
    # the tool's result) are accepted, and the answer comes from the result.
    reply = await bound.ainvoke([question, merged, ToolMessage("09:30 UTC", tool_call_id=call["id"])])
    assert str(reply.content).startswith("Tool result: 09:30 UTC")


@pytest.mark.parametrize("bound", [2**53 - 1, 10**20], ids=["js-max-safe-integer", "beyond-it"])
async def test_a_tool_schema_with_bounds_javascript_holds_only_as_bigints_reaches_the_model(start_runtime, http, bound):
    # Pyodide hands such an int to JS as a BigInt, which the binding cannot serialize: every
    # model failed (found with Claude Code 2.1.328, whose Read tool bounds `offset` so).
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    schema = {"type": "object", "properties": {"offset": {"type": "integer", "minimum": -bound, "maximum": bound}}}
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": schema}}]
    response = await http.post(runtime.url + "/v1/chat/completions",
                               json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "tools": tools})
    assert response.status_code == 200, response.text[:300]
    assert response.json()["choices"][0]["finish_reason"] in ("stop", "length")

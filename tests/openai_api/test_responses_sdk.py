"""/v1/responses read by the official `openai` Python package, through the real runtime:
streamed, collected and `responses.stream()`, reasoning, function calls and their round
trip, the honest endings (incomplete at the budget, failed when the upstream breaks), and
refusals in OpenAI's error shape."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from openai.types.responses import ResponseStreamEvent

from tests.harness.runtime import LocalRuntime, RuntimeOptions
from tests.harness.scenarios import done_frame, echo, error, native_frame, script, scripted_options, sleep, usage_frame
from tests.image_files import png
from tests.openai_api.test_openai_sdk import MODEL, sdk
from tests.openai_api.test_openai_tools import ONE_CALL, PARALLEL, chunk, steps

TIME_TOOL = {"type": "function", "name": "current_time", "description": "The current time in an IANA time zone.",
             "parameters": {"type": "object", "properties": {"timezone": {"type": "string", "examples": ["UTC"]}},
                            "required": ["timezone"]}, "strict": False}
WEATHER_TOOL = {"type": "function", "name": "get_weather", "description": "The weather in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}

THINKING = [chunk({"role": "assistant", "content": ""}, 0), chunk({"reasoning_content": "Let me "}, 1),
            chunk({"reasoning_content": "think."}, 2), chunk({"content": "Forty"}, 3), chunk({"content": "-two."}, 4),
            chunk({"content": ""}, 4, "stop"), chunk({}, 4, choices=False), "data: [DONE]\n\n"]
CUT = [chunk({"role": "assistant", "content": ""}, 0), chunk({"content": "Once upon"}, 1), chunk({"content": " a time"}, 2),
       chunk({"content": ""}, 2, "length"), chunk({}, 2, choices=False), "data: [DONE]\n\n"]
# vLLM's mid-stream failure: an error object, then [DONE] (the promise issue's first case).
VLLM_ERROR = [chunk({"role": "assistant", "content": ""}, 0), chunk({"content": "Half an"}, 1),
              'data: {"error":{"object":"error","message":"secret provider detail","type":"BadRequestError","code":400}}\n\n',
              "data: [DONE]\n\n"]

SCRIPTS = scripted_options(
    [echo(), usage_frame(3, 1), done_frame()],
    prompts={
        "think": script(steps(THINKING)),
        "call a tool": script(steps(ONE_CALL)),
        "call two tools": script(steps(PARALLEL)),
        "cut off": script(steps(CUT)),
        "vllm error": script(steps(VLLM_ERROR)),
        "fails midway": script([native_frame("Hel"), sleep(50), native_frame("lo"), sleep(50), error("secret provider detail")]),
        "ends early": script([native_frame("Hel"), native_frame("lo")]),
    },
)


def scripted(start_runtime: Any) -> LocalRuntime:
    return start_runtime(SCRIPTS)


async def events_of(runtime: LocalRuntime, **request: Any) -> list[ResponseStreamEvent]:
    stream = await sdk(runtime).responses.create(model=MODEL, stream=True, **request)
    return [event async for event in stream]


def terminal_types(events: list[ResponseStreamEvent]) -> list[str]:
    return [event.type for event in events if event.type in ("response.completed", "response.incomplete", "response.failed")]


def assert_well_ordered(events: list[ResponseStreamEvent]) -> None:
    """Sequence numbers from 0 without a gap; created and in_progress first; every item
    added once and done once, in order; exactly one terminal, last."""
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert [event.type for event in events[:2]] == ["response.created", "response.in_progress"]
    assert len(terminal_types(events)) == 1 and events[-1].type == terminal_types(events)[0]
    added = [event.output_index for event in events if event.type == "response.output_item.added"]
    done = [event.output_index for event in events if event.type == "response.output_item.done"]
    assert added == list(range(len(added))) and sorted(done) == sorted(set(done))
    # Every item is closed, but the one a cut or a failure fell in: never `done`, listed incomplete.
    open_items = set(added) - set(done)
    final = events[-1].response.output
    assert open_items == {index for index, item in enumerate(final) if item.status == "incomplete"}
    assert not open_items or events[-1].type != "response.completed"


# --- answers -------------------------------------------------------------------------------


@pytest.mark.smoke
async def test_a_streamed_response_is_the_emulators_answer_with_every_event_in_order(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    collected = await sdk(runtime).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hello there"}])
    events = await events_of(runtime, input="Hello there")
    assert_well_ordered(events)
    text = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert text == collected.choices[0].message.content and len(text) > 0
    final = events[-1]
    assert final.type == "response.completed"
    response = final.response
    assert response.status == "completed" and response.model == MODEL and response.id.startswith("resp_")
    assert response.output_text == text
    assert response.usage is not None and response.usage.output_tokens > 0
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens
    deltas = [event for event in events if event.type == "response.output_text.delta"]
    assert all(event.logprobs == [] and event.content_index == 0 for event in deltas)
    assert len({event.item_id for event in deltas}) == 1


async def test_a_collected_response_is_the_same_answer_and_output_text_reads_it(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    streamed = await events_of(runtime, input="Tell me about owls", instructions="Be brief.")
    response = await sdk(runtime).responses.create(model=MODEL, input="Tell me about owls", instructions="Be brief.")
    assert response.object == "response" and response.status == "completed"
    assert response.output_text == streamed[-1].response.output_text
    assert response.instructions == "Be brief."
    assert response._request_id


async def test_responses_stream_helper_yields_text_and_the_final_response(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    async with sdk(runtime).responses.stream(model=MODEL, input="Write a line about rain") as stream:
        texts = [event.delta async for event in stream if event.type == "response.output_text.delta"]
        final = await stream.get_final_response()
    assert final.status == "completed" and final.output_text == "".join(texts) != ""


async def test_reasoning_is_its_own_item_before_the_message_and_never_answer_text(start_runtime):
    runtime = scripted(start_runtime)
    events = await events_of(runtime, input="think")
    assert_well_ordered(events)
    reasoning = "".join(event.delta for event in events if event.type == "response.reasoning_text.delta")
    text = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert (reasoning, text) == ("Let me think.", "Forty-two.")
    output = events[-1].response.output
    assert [item.type for item in output] == ["reasoning", "message"]
    assert output[0].content[0].text == "Let me think." and output[0].summary == []
    assert events[-1].response.output_text == "Forty-two."


async def test_asked_for_a_summary_the_reasoning_comes_as_the_summary(start_runtime):
    # No model here summarizes its thinking: the thinking itself is the summary (docs/openai.md).
    runtime = scripted(start_runtime)
    events = await events_of(runtime, input="think", reasoning={"effort": "low", "summary": "auto"})
    assert_well_ordered(events)
    assert "".join(event.delta for event in events if event.type == "response.reasoning_summary_text.delta") == "Let me think."
    reasoning = events[-1].response.output[0]
    assert reasoning.summary[0].text == "Let me think." and reasoning.content == []


async def test_an_image_in_input_reaches_a_vision_model(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    url = "data:image/png;base64," + __import__("base64").b64encode(png(3, 2)).decode()
    response = await sdk(runtime).responses.create(
        model="@cf/google/gemma-4-26b-a4b-it",
        input=[{"role": "user", "content": [{"type": "input_text", "text": "What is this?"},
                                            {"type": "input_image", "image_url": url, "detail": "auto"}]}])
    assert response.output_text.startswith("I see a 3×2 PNG")


# --- tools ---------------------------------------------------------------------------------


async def test_a_function_call_streams_as_a_function_call_item_with_the_models_call_id(start_runtime):
    runtime = scripted(start_runtime)
    events = await events_of(runtime, input="call a tool", tools=[TIME_TOOL])
    assert_well_ordered(events)
    deltas = "".join(event.delta for event in events if event.type == "response.function_call_arguments.delta")
    done = [event for event in events if event.type == "response.function_call_arguments.done"]
    assert deltas == done[0].arguments == '{"timezone": "UTC"}'
    final = events[-1]
    assert final.type == "response.completed"
    [call] = final.response.output
    assert (call.type, call.call_id, call.name, call.status) == ("function_call", "chatcmpl-tool-a1", "current_time", "completed")
    assert call.id and call.id.startswith("fc_")


async def test_parallel_calls_are_two_items_in_order(start_runtime):
    runtime = scripted(start_runtime)
    response = await sdk(runtime).responses.create(model=MODEL, input="call two tools", tools=[TIME_TOOL, WEATHER_TOOL])
    assert [(item.name, json.loads(item.arguments)) for item in response.output] == [
        ("current_time", {"timezone": "UTC"}), ("get_weather", {"city": "Paris"})]


async def test_a_tool_round_trip_sends_the_result_back_to_the_model(start_runtime):
    # The emulator calls current_time when the question holds one of its name's words,
    # and after a tool result answers "Tool result: " and the result's start.
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    client = sdk(runtime)
    question = [{"role": "user", "content": "What is the current time in UTC?"}]
    first = await client.responses.create(model=MODEL, input=question, tools=[TIME_TOOL])
    calls = [item for item in first.output if item.type == "function_call"]
    assert [call.name for call in calls] == ["current_time"]
    history = [*question, *[item.model_dump(exclude_none=True) for item in first.output],
               {"type": "function_call_output", "call_id": calls[0].call_id, "output": "12:34 UTC"}]
    second = await client.responses.create(model=MODEL, input=history, tools=[TIME_TOOL])
    assert second.status == "completed" and "Tool result: 12:34 UTC" in second.output_text


async def test_a_namespace_tool_is_called_with_its_namespace_and_name_apart(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    namespace = {"type": "namespace", "name": "clock", "description": "Clocks.", "tools": [dict(TIME_TOOL)]}
    response = await sdk(runtime).responses.create(model=MODEL, input="The current time, please", tools=[namespace, {"type": "web_search"}])
    [call] = [item for item in response.output if item.type == "function_call"]
    assert (call.namespace, call.name) == ("clock", "current_time")


# --- endings -------------------------------------------------------------------------------


async def test_an_answer_cut_at_the_budget_is_incomplete_never_completed(start_runtime):
    runtime = scripted(start_runtime)
    events = await events_of(runtime, input="cut off", max_output_tokens=2)
    assert_well_ordered(events)
    assert terminal_types(events) == ["response.incomplete"]
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"
    assert events[-1].response.output[-1].status == "incomplete"
    collected = await sdk(runtime).responses.create(model=MODEL, input="cut off", max_output_tokens=2)
    assert collected.status == "incomplete" and collected.output_text == "Once upon a time"
    assert collected.output[-1].status == "incomplete"


@pytest.mark.parametrize("prompt", ["vllm error", "fails midway", "ends early"])
async def test_an_upstream_that_breaks_midway_raises_in_the_sdk_and_never_completes(start_runtime, prompt):
    runtime = scripted(start_runtime)
    seen: list[str] = []
    with pytest.raises(openai.APIError) as raised:
        stream = await sdk(runtime).responses.create(model=MODEL, input=prompt, stream=True)
        async for event in stream:
            seen.append(event.type)
    assert "response.completed" not in seen and "response.output_text.delta" in seen
    assert "secret" not in str(raised.value)


async def test_a_client_that_skips_error_events_ends_on_response_failed(start_runtime, http):
    # Codex CLI reads no `error` event: the terminal it ends on is response.failed.
    runtime = scripted(start_runtime)
    body = {"model": MODEL, "input": "vllm error", "stream": True}
    async with http.stream("POST", runtime.url + "/v1/responses", json=body) as response:
        text = (await response.aread()).decode()
    kinds = [line[7:] for line in text.splitlines() if line.startswith("event: ")]
    assert kinds[-2:] == ["error", "response.failed"] and "response.completed" not in kinds
    failed = json.loads(text.rstrip().rsplit("data: ", 1)[1])
    assert failed["response"]["status"] == "failed" and failed["response"]["error"]["code"] == "server_error"
    assert "(generation_failed, request " in failed["response"]["error"]["message"]
    assert "[DONE]" not in text


async def test_a_collected_failure_is_an_error_status_in_openais_shape(start_runtime):
    runtime = scripted(start_runtime)
    with pytest.raises(openai.APIStatusError) as raised:
        await sdk(runtime).responses.create(model=MODEL, input="fails midway")
    assert raised.value.status_code == 502 and raised.value.code == "generation_failed"


# --- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(("request_fields", "param"), [
    ({"input": [{"type": "function_call_output", "call_id": "nobody", "output": "x"}]}, "input[0].call_id"),
    ({"input": [{"type": "computer_call_output", "call_id": "x"}]}, "input[0].type"),
    ({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "file_1"}]}]}, "input[0].content[0]"),
    ({"input": "hi", "tools": [{"type": "function", "name": "bad name!"}]}, "tools[0].name"),
    ({"input": "hi", "text": {"format": {"type": "json_schema", "name": "x", "schema": 5}}}, "text.format.schema"),
    ({"input": "hi", "truncation": "auto"}, "truncation"),
    ({"input": "hi", "background": True, "store": False}, "background"),
    ({"input": []}, "input"),
])
async def test_a_bad_request_is_a_400_naming_the_field(start_runtime, request_fields, param):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    with pytest.raises(openai.BadRequestError) as raised:
        await sdk(runtime).responses.create(model=MODEL, **request_fields)
    assert raised.value.param == param and raised.value.code == "invalid_request"



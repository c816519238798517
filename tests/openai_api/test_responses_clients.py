"""/v1/responses driven by the clients that speak it by default, through the real runtime:
the OpenAI Agents SDK (Python) and the AI SDK's `openai()` provider (Node), each through a
whole tool loop against the emulator. The emulator calls `current_time` when the question
holds one of its name's words, and after the tool's result answers "Tool result: " and
the result's start (docs/emulator.md), so each test sees the result reach the model."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest
from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from tests.harness.runtime import RuntimeOptions
from tests.openai_api.test_openai_sdk import MODEL, sdk

AI_SDK_DRIVER = Path(__file__).with_name("responses_with_ai_sdk.mjs")

set_tracing_disabled(True)  # the SDK would send traces to OpenAI's servers


@function_tool
def current_time(timezone: str) -> str:
    """The current time in an IANA time zone."""
    return f"12:34 in {timezone}"


def agent(runtime) -> Agent:
    model = OpenAIResponsesModel(model=MODEL, openai_client=sdk(runtime))
    return Agent(name="Clock", instructions="Answer with the time.", model=model, tools=[current_time],
                 model_settings=ModelSettings(max_tokens=512))


async def test_an_agents_sdk_agent_completes_a_tool_loop(start_runtime):
    # Runner.run sends stream: false and reads whole Response objects.
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    result = await Runner.run(agent(runtime), "What is the current time in Oslo?", max_turns=4)
    kinds = [item.type for item in result.new_items]
    assert kinds[:2] == ["tool_call_item", "tool_call_output_item"] and kinds[-1] == "message_output_item"
    assert result.new_items[1].output.startswith("12:34 in ")
    assert "Tool result: 12:34 in " in result.final_output


async def test_an_agents_sdk_streamed_run_completes_the_same_loop(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    streamed = Runner.run_streamed(agent(runtime), "What is the current time in Lima?", max_turns=4)
    raw = [event.data.type async for event in streamed.stream_events() if event.type == "raw_response_event"]
    assert raw.count("response.completed") == 2 and "response.function_call_arguments.delta" in raw
    assert "Tool result: 12:34 in " in streamed.final_output


@pytest.mark.parametrize("prompt", ["What is the current time in Tokyo?"])
async def test_the_ai_sdks_openai_provider_streams_a_tool_loop(start_runtime, prompt):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    done = subprocess.run(["node", str(AI_SDK_DRIVER), runtime.url + "/v1", MODEL, prompt],
                          capture_output=True, text=True, timeout=60, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in result, result
    first, second = result["steps"]
    assert first["finishReason"] == "tool-calls" and [call["toolName"] for call in first["toolCalls"]] == ["current_time"]
    assert first["toolResults"] == [first["toolResults"][0]] and str(first["toolResults"][0]).startswith("12:34 in ")
    assert second["finishReason"] == "stop" and "Tool result: 12:34 in " in result["text"]
    assert "text-delta" in result["parts"] and result["usage"]["outputTokens"] > 0


async def test_the_ai_sdk_shows_the_reasoning_when_asked_as_the_docs_say(start_runtime):
    # @ai-sdk/openai 4.0.118 reads only the reasoning summary events, and sends
    # reasoningSummary only for models it knows think (forceReasoning: docs/openai.md).
    from tests.openai_api.test_responses_sdk import SCRIPTS

    runtime = start_runtime(SCRIPTS)
    done = subprocess.run(["node", str(AI_SDK_DRIVER), runtime.url + "/v1", MODEL, "think", "reasoning"],
                          capture_output=True, text=True, timeout=60, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in result, result
    assert (result["reasoning"], result["text"]) == ("Let me think.", "Forty-two.")
    assert "reasoning-delta" in result["parts"]


async def test_an_agents_sdk_agent_runs_its_tool_loop_on_stored_responses_with_previous_response_id(start_runtime):
    # auto_previous_response_id: each step after the first sends only its new items (the
    # tool's output) and the previous response's id, so the Worker rebuilds the history from
    # the stored response. The agent asks for storage (absent `store` is false here).
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    sent: list[dict] = []

    async def record(request: httpx.Request) -> None:
        sent.append(json.loads(request.content))

    client = AsyncOpenAI(base_url=runtime.url + "/v1", api_key="any", max_retries=0,
                         http_client=httpx.AsyncClient(event_hooks={"request": [record]}, timeout=30))
    stored = agent(runtime).clone(model=OpenAIResponsesModel(model=MODEL, openai_client=client),
                                  model_settings=ModelSettings(max_tokens=512, store=True))
    result = await Runner.run(stored, "What is the current time in Quito?", max_turns=4, auto_previous_response_id=True)
    first, second = sent
    assert first["store"] is True and "previous_response_id" not in first
    assert second["previous_response_id"] == result.raw_responses[0].response_id
    assert [item["type"] for item in second["input"]] == ["function_call_output"]  # the rest is the stored history
    assert result.new_items[1].output.startswith("12:34 in ")
    assert "Tool result: 12:34 in " in result.final_output
    assert [response.response_id.startswith("resp_") and len(response.response_id) == 69 for response in result.raw_responses] == [True, True]
    assert result.last_response_id == result.raw_responses[-1].response_id

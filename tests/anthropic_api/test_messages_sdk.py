"""/v1/messages read by the official `anthropic` Python package (2.10.0), through the real
runtime: answers streamed and not, a tool round trip, a cut at max_tokens, a failure in
the middle that raises, the token in x-api-key, and refusals in Anthropic's shape."""

from __future__ import annotations

import anthropic
import pytest
from anthropic import AsyncAnthropic

from tests.harness.client import USER, chat
from tests.harness.runtime import LocalRuntime, RuntimeOptions
from tests.harness.scenarios import (
    done_frame,
    native_frame,
    scripted_options,
)
from tests.openai_api.test_openai_access import CLOSED, GUARDED, TOKEN
from tests.openai_api.test_openai_sdk import FAILURES as OPENAI_FAILURES

MODEL = "@cf/zai-org/glm-4.7-flash"  # wrangler.toml's MODEL, which a Claude model's name asks for
CLAUDE = "claude-opus-5-5"  # the name Claude Code 2.1.328 sends by default
WEATHER = [{"name": "get_weather", "description": "The weather in a city.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


def sdk(runtime: LocalRuntime, api_key: str = "any key works without AUTH_TOKEN") -> AsyncAnthropic:
    # No retries: each error must reach the test as the status the Worker sent.
    return AsyncAnthropic(base_url=runtime.url, api_key=api_key, max_retries=0, timeout=30)


# The OpenAI suite's runtime of failures (the same scripts: one runtime serves both).
FAILURES = OPENAI_FAILURES


async def test_a_message_is_the_emulators_answer_for_the_same_conversation(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    ours = await chat(http, runtime.url, {"messages": USER})
    message = await sdk(runtime).messages.create(model=CLAUDE, max_tokens=1024, messages=USER)
    assert message.type == "message" and message.role == "assistant" and message.model == MODEL
    assert message.id.startswith("msg_")
    assert [block.type for block in message.content] == ["text"] and message.content[0].text == ours.text  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    usage = ours.terminal.data["usage"]
    assert message.usage.output_tokens == usage["completion_tokens"]
    assert message.usage.input_tokens + (message.usage.cache_read_input_tokens or 0) == usage["prompt_tokens"]


@pytest.mark.smoke
async def test_a_streamed_message_is_message_start_then_one_text_block_then_the_stop_reason_then_message_stop(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    ours = await chat(http, runtime.url, {"messages": USER})
    async with sdk(runtime).messages.stream(model=CLAUDE, max_tokens=1024, messages=USER) as stream:
        events = [event async for event in stream]
        final = await stream.get_final_message()
    kinds = [event.type for event in events if event.type not in ("text", "ping")]
    assert kinds[0] == "message_start" and kinds[1] == "content_block_start" and kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(kinds[2:-3]) == {"content_block_delta"}
    assert final.content[0].text == ours.text and final.stop_reason == "end_turn"  # type: ignore[union-attr]


async def test_thinking_is_a_block_before_the_text_when_asked_for_and_left_out_otherwise(start_runtime):
    # The default model thinks (its own framing: OpenAI-style chunks with reasoning).
    runtime = start_runtime(RuntimeOptions(ai_pace=0, ai_format=None))
    client = sdk(runtime)
    shown = await client.messages.create(model=CLAUDE, max_tokens=1024, messages=USER, thinking={"type": "enabled", "budget_tokens": 2048})
    assert [block.type for block in shown.content] == ["thinking", "text"]
    assert shown.content[0].thinking and shown.content[0].signature == ""  # type: ignore[union-attr]
    async with client.messages.stream(model=CLAUDE, max_tokens=1024, messages=USER,
                                      thinking={"type": "adaptive", "display": "omitted"}) as stream:
        final = await stream.get_final_message()
    assert [block.type for block in final.content] == ["text"]  # indices stay 0, 1, ... over the blocks sent
    plain = await client.messages.create(model=CLAUDE, max_tokens=1024, messages=USER)
    assert [block.type for block in plain.content] == ["text"]


@pytest.mark.parametrize("streamed", [False, True], ids=["create", "stream"])
async def test_a_tool_round_trip(start_runtime, streamed):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    client = sdk(runtime)
    question = [{"role": "user", "content": "What is the weather in Paris?"}]

    async def ask(messages: list) -> anthropic.types.Message:
        if not streamed:
            return await client.messages.create(model=CLAUDE, max_tokens=512, tools=WEATHER, messages=messages)
        async with client.messages.stream(model=CLAUDE, max_tokens=512, tools=WEATHER, messages=messages) as stream:
            return await stream.get_final_message()

    first = await ask(question)
    assert first.stop_reason == "tool_use"
    [call] = [block for block in first.content if block.type == "tool_use"]
    assert call.name == "get_weather" and isinstance(call.input, dict) and set(call.input) == {"city"}
    result = [{"type": "tool_result", "tool_use_id": call.id, "content": "sunny, 21 °C"}]
    second = await ask([*question, {"role": "assistant", "content": first.content}, {"role": "user", "content": result}])
    assert second.stop_reason == "end_turn" and second.content[0].text.startswith("Tool result: sunny, 21 °C")  # type: ignore[union-attr]


@pytest.mark.parametrize("streamed", [False, True], ids=["create", "stream"])
async def test_an_answer_cut_at_max_tokens_says_so(start_runtime, streamed):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    client = sdk(runtime)
    if streamed:
        async with client.messages.stream(model=CLAUDE, max_tokens=5, messages=USER) as stream:
            message = await stream.get_final_message()
    else:
        message = await client.messages.create(model=CLAUDE, max_tokens=5, messages=USER)
    assert message.stop_reason == "max_tokens" and message.usage.output_tokens == 5 and message.content[0].text  # type: ignore[union-attr]


async def test_a_budget_above_the_workers_is_lowered_to_it(start_runtime):
    # Claude Code asks for 128,000: the Worker's MAX_TOKENS (4096) is the budget.
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    message = await sdk(runtime).messages.create(model=CLAUDE, max_tokens=128_000, messages=USER)
    assert message.stop_reason == "end_turn"


@pytest.mark.parametrize("prompt", ["fails midway", "cut off"])
async def test_a_stream_that_fails_after_its_start_raises_and_keeps_what_came_first(start_runtime, prompt):
    runtime = start_runtime(FAILURES)
    texts: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as failed:
        async with sdk(runtime).messages.stream(model=CLAUDE, max_tokens=64, messages=[{"role": "user", "content": prompt}]) as stream:
            async for text in stream.text_stream:
                texts.append(text)
    assert "".join(texts) == "Hello"
    assert failed.value.body["type"] == "error" and failed.value.body["error"]["type"] == "api_error"  # type: ignore[index]
    assert "secret" not in str(failed.value.body)


async def test_a_failure_of_a_collected_answer_is_its_status_in_anthropics_shape(start_runtime):
    runtime = start_runtime(FAILURES)
    with pytest.raises(anthropic.APIStatusError) as failed:
        await sdk(runtime).messages.create(model=CLAUDE, max_tokens=64, messages=[{"role": "user", "content": "fails midway"}])
    assert failed.value.status_code == 502 and failed.value.body["error"]["type"] == "api_error"  # type: ignore[index]
    with pytest.raises(anthropic.APIStatusError) as busy:
        await sdk(runtime).messages.create(model=CLAUDE, max_tokens=64, messages=[{"role": "user", "content": "rate limited"}])
    assert busy.value.body["error"]["type"] in ("overloaded_error", "rate_limit_error")  # type: ignore[index]


async def test_a_stop_sequence_ends_the_answer_before_it_and_is_named(start_runtime):
    runtime = start_runtime(scripted_options([native_frame("Once upon"), native_frame(" a time. THE END and more"), done_frame()]))
    message = await sdk(runtime).messages.create(model=CLAUDE, max_tokens=64, messages=USER, stop_sequences=["THE END", "time"])
    assert message.content[0].text == "Once upon a " and message.stop_reason == "stop_sequence"  # type: ignore[union-attr]
    assert message.stop_sequence == "time"


async def test_count_tokens_is_an_estimate_that_grows_with_the_request(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    client = sdk(runtime)
    short = await client.messages.count_tokens(model=CLAUDE, messages=USER)
    long = await client.messages.count_tokens(model=CLAUDE, messages=[{"role": "user", "content": "word " * 6000}], tools=WEATHER)
    assert 1 <= short.input_tokens < 10 and 4000 < long.input_tokens < 6000


async def test_refusals_are_in_anthropics_shape_with_its_types(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    client = sdk(runtime)
    with pytest.raises(anthropic.BadRequestError) as bad:
        await client.messages.create(model=CLAUDE, max_tokens=64, messages=[{"role": "user", "content": [{"type": "video"}]}])
    assert bad.value.body["error"]["type"] == "invalid_request_error" and "messages[0].content[0].type" in bad.value.message  # type: ignore[index]
    with pytest.raises(anthropic.NotFoundError) as unknown:
        await client.messages.create(model="gpt-5", max_tokens=64, messages=USER)
    assert unknown.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]


# The access suite's runtimes, shared.


async def test_the_token_is_taken_from_x_api_key_or_as_a_bearer_token(start_runtime):
    runtime = start_runtime(GUARDED)
    keyed = await sdk(runtime, api_key=TOKEN).messages.create(model=CLAUDE, max_tokens=64, messages=USER)
    bearer = await AsyncAnthropic(base_url=runtime.url, auth_token=TOKEN, max_retries=0).messages.create(
        model=CLAUDE, max_tokens=64, messages=USER)
    assert keyed.stop_reason and bearer.stop_reason
    with pytest.raises(anthropic.AuthenticationError) as refused:
        await sdk(runtime, api_key="wrong").messages.create(model=CLAUDE, max_tokens=64, messages=USER)
    assert refused.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]


async def test_without_a_token_or_the_var_v1_messages_is_closed(start_runtime):
    runtime = start_runtime(CLOSED)
    with pytest.raises(anthropic.AuthenticationError) as refused:
        await sdk(runtime).messages.create(model=CLAUDE, max_tokens=64, messages=USER)
    assert 'OPENAI_API_PUBLIC = "true"' in refused.value.message

"""Conversations (`/v1/conversations`, and `conversation` on `/v1/responses`) through the
real runtime (issue 40): the `openai` package's conversations calls, responses that are
turns of a conversation, the Agents SDK's OpenAIConversationsSession and its runs with a
`conversation_id`, and every bad id, item and page refused in OpenAI's shape before
anything reaches the model. The emulator answers with the conversation it was sent (one
`role: text` line a message), so each test sees what the model read."""

from __future__ import annotations

import json
import subprocess

import httpx
import openai
import pytest
from agents import Agent, OpenAIConversationsSession, OpenAIResponsesModel, Runner, set_tracing_disabled

from tests.harness.runtime import RuntimeOptions
from tests.harness.scenarios import done_frame, scripted_options, transcript, usage_frame
from tests.openai_api.test_openai_sdk import MODEL, sdk
from tests.openai_api.test_responses_clients import AI_SDK_DRIVER
from tests.runtime.test_rate_limit import in_one_window

set_tracing_disabled(True)  # the SDK would send traces to OpenAI's servers
SCRIPTS = scripted_options([transcript(), usage_frame(3, 1), done_frame()])


def ai_runs(runtime, mark: int) -> int:
    return sum(1 for record in runtime.records(mark) if record["event"] == "ai_run")


def said(response) -> list[str]:
    """The lines of the conversation the model was sent, its system prompt left out."""
    return response.output_text.splitlines()[1:]


async def test_the_openai_package_creates_reads_changes_pages_and_deletes_a_conversation(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    created = await client.conversations.create(items=[{"role": "user", "content": f"first {n}"} for n in range(3)], metadata={"topic": "a"})
    assert created.id.startswith("conv_") and len(created.id) == 69 and created.metadata == {"topic": "a"}
    assert (await client.conversations.retrieve(created.id)).model_dump() == created.model_dump()
    assert (await client.conversations.update(created.id, metadata={"topic": "b"})).metadata == {"topic": "b"}
    added = await client.conversations.items.create(created.id, items=[
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "an answer"}]},
        {"type": "function_call", "call_id": "c1", "name": "now", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "noon"}])
    assert [item.type for item in added.data] == ["message", "function_call", "function_call_output"]
    assert [item.id.split("_")[0] for item in added.data] == ["msg", "fc", "fco"]
    walked = [item async for item in client.conversations.items.list(created.id, limit=2, order="asc")]
    assert [item.id for item in walked[3:]] == [item.id for item in added.data] and len(walked) == 6
    newest = await client.conversations.items.list(created.id, limit=2)
    assert [item.id for item in newest.data] == [walked[5].id, walked[4].id] and newest.has_more
    one = await client.conversations.items.retrieve(walked[0].id, conversation_id=created.id)
    assert one.content[0].text == "first 0" and one.status == "completed"
    assert (await client.conversations.items.delete(walked[0].id, conversation_id=created.id)).id == created.id
    assert [item.id async for item in client.conversations.items.list(created.id, order="asc")] == [item.id for item in walked[1:]]
    with pytest.raises(openai.NotFoundError):
        await client.conversations.items.retrieve(walked[0].id, conversation_id=created.id)
    deleted = await client.conversations.delete(created.id)
    assert deleted.deleted and deleted.id == created.id
    with pytest.raises(openai.NotFoundError) as gone:
        await client.conversations.retrieve(created.id)
    assert gone.value.code == "conversation_not_found"


async def test_a_page_of_large_items_ends_early_and_the_sdk_pages_on(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    conversation = await client.conversations.create(items=[{"role": "user", "content": str(n) * 600_000} for n in range(3)])
    first = await client.conversations.items.list(conversation.id, limit=100, order="asc")
    assert len(first.data) == 2 and first.has_more, "a page holds about a megabyte of items at most"
    walked = [item.content[0].text[0] async for item in client.conversations.items.list(conversation.id, limit=100, order="asc")]
    assert walked == ["0", "1", "2"]


async def test_responses_of_a_conversation_read_it_and_are_added_to_it(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    conversation = await client.conversations.create(items=[{"role": "user", "content": "My name is Ada."}])
    first = await client.responses.create(model=MODEL, input="What is my name?", conversation=conversation.id)
    assert first.conversation.id == conversation.id and said(first) == ["user: My name is Ada.", "user: What is my name?"]
    stream = await client.responses.create(model=MODEL, input="And again?", conversation={"id": conversation.id}, stream=True)
    events = [event async for event in stream]
    second = events[-1].response
    assert events[-1].type == "response.completed" and second.conversation.id == conversation.id
    answered = [f"assistant: {line}" if n == 0 else line for n, line in enumerate(first.output_text.splitlines())]
    assert said(second) == ["user: My name is Ada.", "user: What is my name?", *answered, "user: And again?"]
    kinds = [(item.type, item.role) async for item in client.conversations.items.list(conversation.id, order="asc")]
    assert kinds == [("message", "user"), ("message", "user"), ("message", "assistant"), ("message", "user"), ("message", "assistant")]


async def test_an_agents_sdk_session_on_a_conversation_holds_two_turns(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    agent = Agent(name="Echo", model=OpenAIResponsesModel(model=MODEL, openai_client=client))
    session = OpenAIConversationsSession(openai_client=client)
    first = await Runner.run(agent, "My name is Ada.", session=session)
    second = await Runner.run(agent, "What is my name?", session=session)
    assert "user: My name is Ada." in second.final_output and "user: What is my name?" in second.final_output
    assert first.final_output.splitlines()[0] in second.final_output  # its answer came back as history
    kept = await session.get_items()
    assert [item.get("role") for item in kept] == ["user", "assistant", "user", "assistant"]
    assert (await session.pop_item())["role"] == "assistant"
    assert len(await session.get_items()) == 3
    await session.clear_session()


async def test_an_agents_sdk_run_with_a_conversation_id_sends_only_its_new_items(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    agent = Agent(name="Echo", model=OpenAIResponsesModel(model=MODEL, openai_client=client))
    conversation = await client.conversations.create()
    await Runner.run(agent, "My name is Ada.", conversation_id=conversation.id)
    second = await Runner.run(agent, "What is my name?", conversation_id=conversation.id)
    assert second.final_output.splitlines()[1] == "user: My name is Ada." and "user: What is my name?" in second.final_output


async def test_the_ai_sdks_tool_loop_runs_as_turns_of_a_conversation(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0, ai_format=None))
    conversation = await sdk(runtime).conversations.create()
    done = subprocess.run(["node", str(AI_SDK_DRIVER), runtime.url + "/v1", MODEL, "What is the current time in Oslo?",
                           f"conversation={conversation.id}"], capture_output=True, text=True, timeout=60, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in result, result
    assert result["steps"][0]["finishReason"] == "tool-calls" and "Tool result: 12:34 in " in result["text"]
    assert "item_reference" not in result["sent"][1], "with a conversation, earlier items are not referred to"
    kinds = [item.type async for item in sdk(runtime).conversations.items.list(conversation.id, order="asc")]
    assert kinds[0] == "message" and "function_call" in kinds and "function_call_output" in kinds and kinds[-1] == "message"


async def test_writing_a_conversation_spends_the_clients_budget_and_reading_it_does_not(start_runtime):
    runtime = start_runtime(scripted_options([transcript(), done_frame()], rate_limit=2))
    client = sdk(runtime)
    await in_one_window()  # the local limiter's windows follow the clock: none may end mid-test
    conversation = await client.conversations.create()
    for _ in range(5):
        await client.conversations.items.list(conversation.id)
        await client.conversations.retrieve(conversation.id)
    await client.conversations.items.create(conversation.id, items=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.RateLimitError):
        await client.conversations.items.create(conversation.id, items=[{"role": "user", "content": "again"}])


async def test_every_bad_conversation_request_is_refused_in_openais_shape_and_nothing_reaches_the_model(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    conversation = await client.conversations.create(items=[{"role": "user", "content": "hi"}])
    other = await client.conversations.create(items=[{"role": "user", "content": "hi"}])
    [other_item] = (await client.conversations.items.list(other.id)).data
    stored = await client.responses.create(model=MODEL, input="hi")
    mark = len(runtime.lines)
    for value in ("conv_x", f"conv_{'0' * 64}", f"conv_{'f' * 64}", "x" * 10_000, stored.id):
        with pytest.raises(openai.NotFoundError) as missing:
            await client.responses.create(model=MODEL, input="hi", conversation=value)
        assert missing.value.code == "conversation_not_found"
        with pytest.raises(openai.NotFoundError):
            await client.conversations.retrieve(value)
    for fields, param in (({"conversation": 5}, "conversation"), ({"conversation": {"id": None}}, "conversation"),
                          ({"conversation": conversation.id, "previous_response_id": stored.id}, "conversation"),
                          ({"conversation": conversation.id, "store": False}, "store")):
        with pytest.raises(openai.BadRequestError) as refused:
            await client.responses.create(model=MODEL, input="hi", **fields)
        assert refused.value.param == param
    for items, param in (([{"role": "user", "content": "x"}] * 21, "items"), ([{"type": "item_reference", "id": "x"}], "items[0].type"),
                         ([{"role": "robot", "content": "x"}], "items[0].role"), (["x"], "items[0]"),
                         ([{"type": "function_call", "call_id": "", "name": "n", "arguments": "{}"}], "items[0].call_id"),
                         ([{"type": "reasoning", "summary": [{"type": "x" * 1000, "text": "t"}]}], "items[0].summary")):
        with pytest.raises(openai.BadRequestError) as refused:
            await client.conversations.items.create(conversation.id, items=items)
        assert refused.value.param == param, items
    with pytest.raises(openai.BadRequestError) as refused:
        await client.conversations.create(metadata={str(n): "v" for n in range(17)})
    assert refused.value.param == "metadata"
    with pytest.raises(openai.NotFoundError):
        await client.conversations.items.retrieve(other_item.id, conversation_id=conversation.id)
    async with httpx.AsyncClient(timeout=30) as http:
        base = f"{runtime.url}/v1/conversations/{conversation.id}"
        for method, path, body, status, param in (
            ("POST", "", {}, 400, "metadata"), ("POST", "", {"metadata": "x"}, 400, "metadata"),
            ("GET", "/items?limit=101", None, 400, "limit"), ("GET", f"/items?after={other_item.id}", None, 400, "after"),
            ("GET", "/items?order=up", None, 400, "order"), ("POST", "/items", {"items": []}, 400, "items"),
            ("GET", "/items/msg_nothing", None, 404, None), ("DELETE", f"/items/{other_item.id}", None, 404, None),
            ("PUT", "", None, 405, None),
        ):
            answer = await http.request(method, base + path, json=body)
            assert answer.status_code == status, (method, path, answer.text)
            assert answer.json()["error"]["type"] == "invalid_request_error" and answer.json()["error"]["param"] == param
    assert ai_runs(runtime, mark) == 0, "no refused request reached the model"
    assert len((await client.conversations.items.list(conversation.id)).data) == 1, "nothing refused was kept"

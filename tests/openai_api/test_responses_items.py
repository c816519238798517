"""The items of stored responses through the real runtime (issue 40): `item_reference` input
items resolved from the responses that hold them, as the AI SDK's `openai()` sends them by
default; `GET /v1/responses/{id}/input_items` paged by the `openai` package; and every bad
reference or page refused in OpenAI's shape before anything reaches the model."""

from __future__ import annotations

import json
import subprocess

import httpx
import openai
import pytest

from tests.harness.runtime import RuntimeOptions
from tests.harness.scenarios import done_frame, held, native_frame, script, scripted_options, transcript, usage_frame
from tests.openai_api.test_openai_sdk import MODEL, sdk
from tests.openai_api.test_responses_clients import AI_SDK_DRIVER
from tests.openai_api.test_responses_stored import release

# Each answer is the conversation the model was sent, one `role: text` line a message.
SCRIPTS = scripted_options([transcript(), usage_frame(3, 1), done_frame()],
                           prompts={"held": script([native_frame("Held."), held("items-held"), done_frame()]),
                                    "briefly": script([native_frame("Brief."), done_frame()])})


def ai_runs(runtime, mark: int) -> int:
    return sum(1 for record in runtime.records(mark) if record["event"] == "ai_run")


@pytest.mark.parametrize("mode", ["defaults", "store-false"])
async def test_the_ai_sdks_default_tool_loop_runs_on_stored_items_and_without_them(start_runtime, mode):
    # The provider sends no `store` and, counting on OpenAI's default, refers to the
    # reasoning of step one by id in step two (the catalog frames glm-4.7-flash as a thinking model).
    runtime = start_runtime(RuntimeOptions(ai_pace=0, ai_format=None))
    done = subprocess.run(["node", str(AI_SDK_DRIVER), runtime.url + "/v1", MODEL, "What is the current time in Oslo?", mode],
                          capture_output=True, text=True, timeout=60, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in result, result
    first, second = result["sent"][:2]
    assert first == ["message"]
    if mode == "defaults":
        assert result["stores"][0] is None and "item_reference" in second
    else:
        assert result["stores"] == [False, False] and "item_reference" not in second
    assert len(result["steps"]) >= 2 and result["steps"][0]["finishReason"] == "tool-calls"
    assert result["steps"][-1]["finishReason"] == "stop" and "Tool result: 12:34 in " in result["text"]


async def test_references_to_items_of_several_stored_responses_bring_their_items(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    one = await client.responses.create(model=MODEL, input="Alpha")
    two = await client.responses.create(model=MODEL, input=[{"role": "user", "content": "Beta"},
                                                               {"type": "function_call", "call_id": "c1", "name": "now", "arguments": "{}"},
                                                               {"type": "function_call_output", "call_id": "c1", "output": "noon"}])
    assert one.store is True and one.output[0].id.startswith("msg_" + one.id[5:])
    inputs = [item.id async for item in client.responses.input_items.list(two.id, order="asc")]
    third = await client.responses.create(model=MODEL, input=[
        {"type": "item_reference", "id": inputs[0]},  # the user's "Beta"
        {"type": "item_reference", "id": one.output[0].id},  # the answer to "Alpha"
        {"type": "item_reference", "id": inputs[1]}, {"type": "item_reference", "id": inputs[2]},  # a call and its result
        {"role": "user", "content": "Gamma"},
    ], store=False)
    answered = f"assistant: {one.output[0].content[0].text}".splitlines()  # the transcript of "Alpha"
    # The call joins the assistant message before it, as a call sent whole would.
    assert third.output[0].content[0].text.splitlines()[1:] == ["user: Beta", *answered, "tool: noon", "user: Gamma"]


async def test_input_items_are_paged_by_the_sdk_in_either_order(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    texts = [f"message {n}" for n in range(7)]
    created = await client.responses.create(model=MODEL, input=[{"role": "user", "content": text} for text in texts])
    page = await client.responses.input_items.list(created.id, limit=3, order="asc")
    assert [item.content[0].text for item in page.data] == texts[:3] and page.has_more
    walked = [item async for item in client.responses.input_items.list(created.id, limit=3, order="asc")]
    assert [item.content[0].text for item in walked] == texts and len({item.id for item in walked}) == 7
    assert all(item.type == "message" and item.role == "user" and item.status == "completed" for item in walked)
    newest = await client.responses.input_items.list(created.id)
    assert [item.content[0].text for item in newest.data] == texts[::-1] and not newest.has_more


async def test_every_bad_reference_is_refused_in_openais_shape_and_nothing_reaches_the_model(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    stored = await client.responses.create(model=MODEL, input="Alpha")
    unstored = await client.responses.create(model=MODEL, input="Alpha", store=False)
    key = stored.id[5:]
    mark = len(runtime.lines)
    for item_id in (unstored.output[0].id, f"msg_{key}_7", f"msg_{key}_i9", f"msg_{'0' * 64}_0", f"msg_{'f' * 64}_0",
                    "msg_" + "a" * 10_000, "\u2028\x00", f"rs_{key}_01"):
        with pytest.raises(openai.NotFoundError) as missing:
            await client.responses.create(model=MODEL, input=[{"role": "user", "content": "hi"}, {"type": "item_reference", "id": item_id}])
        assert missing.value.code == "item_not_found" and missing.value.param == "input[1]"
        assert "not found" in missing.value.message and "\u2028" not in missing.value.message
    for bad, param in (({"type": "item_reference"}, "input[0].id"), ({"type": "item_reference", "id": ["x"]}, "input[0].id"),
                       ([{"type": "item_reference", "id": f"msg_{n:064x}_0"} for n in range(65)], "input")):
        with pytest.raises(openai.BadRequestError) as refused:
            await client.responses.create(model=MODEL, input=bad if isinstance(bad, list) else [bad])
        assert refused.value.param == param
    # An item the reference brings is checked as one sent whole: a user message of nothing but space is not one.
    with pytest.raises(openai.BadRequestError):
        await client.responses.create(model=MODEL, input=[{"type": "item_reference", "id": stored.output[0].id}])
    assert ai_runs(runtime, mark) == 0, "no refused request reached the model"


async def test_many_references_to_one_large_item_are_refused_at_once_and_the_worker_keeps_serving(start_runtime):
    # The attack on issue 40: a 700,000-character input item referred to 700 times took
    # 13 s and 4 GB to refuse (the object built 700 copies), and 1,000 times was a 500.
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    large = await client.responses.create(model=MODEL, input=[{"role": "user", "content": "é" * 700_000},
                                                                 {"role": "user", "content": "briefly"}])
    mark = len(runtime.lines)
    for count in (700, 1000):
        with pytest.raises(openai.BadRequestError) as refused:
            await client.responses.create(model=MODEL, input=[{"type": "item_reference", "id": f"msg_{large.id[5:]}_i0"}] * count)
        assert refused.value.param.startswith("input") and "more than a request may hold" in refused.value.message
    with pytest.raises(openai.NotFoundError):  # an id of another kind than its item's was never issued
        await client.responses.create(model=MODEL, input=[{"type": "item_reference", "id": f"rs_{large.id[5:]}_i0"}])
    assert ai_runs(runtime, mark) == 0 and not runtime.crash_lines(mark)
    assert (await client.responses.create(model=MODEL, input="still here", store=False)).status == "completed"


async def test_an_item_of_a_response_still_in_progress_is_refused_until_it_ends(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    job = await client.responses.create(model=MODEL, input="held", background=True)
    try:
        with pytest.raises(openai.BadRequestError) as refused:
            await client.responses.create(model=MODEL, input=[{"role": "user", "content": "hi"},
                                                               {"type": "item_reference", "id": f"msg_{job.id[5:]}_0"}])
        assert refused.value.param == "input[1]" and "in progress" in refused.value.message
        listed = await client.responses.input_items.list(job.id)  # its input is kept from the start
        assert [item.content[0].text for item in listed.data] == ["held"]
    finally:
        await release(runtime, "items-held")


async def test_bad_input_item_pages_and_ids_are_4xx_in_openais_shape(start_runtime):
    runtime = start_runtime(SCRIPTS)
    client = sdk(runtime)
    created = await client.responses.create(model=MODEL, input="Alpha")
    async with httpx.AsyncClient(timeout=30) as http:
        base = f"{runtime.url}/v1/responses"
        for path, status, param in ((f"/{created.id}/input_items?limit=0", 400, "limit"),
                                    (f"/{created.id}/input_items?limit=1000000000000000000000", 400, "limit"),
                                    (f"/{created.id}/input_items?order=sideways", 400, "order"),
                                    (f"/{created.id}/input_items?after=msg_nobody", 400, "after"),
                                    (f"/{created.id}/input_items?after={'x' * 5000}", 400, "after"),
                                    (f"/resp_{'0' * 64}/input_items", 404, None), ("/resp_x/input_items", 404, None),
                                    (f"/{created.id[:-1]}/input_items", 404, None)):
            answer = await http.get(base + path)
            assert answer.status_code == status, (path, answer.text)
            error = answer.json()["error"]
            assert error["type"] == "invalid_request_error" and error["param"] == param
        assert (await http.post(f"{base}/{created.id}/input_items")).status_code == 405

"""A /v1 that is never open by accident, in the real runtime: a Worker deployed without the
AUTH_TOKEN secret answers /v1's chat routes with 401 unless OPENAI_API_PUBLIC is "true"
(wrangler.toml: "false"; the local launchers set "true", so these runtimes set it back to
"false", as `--var OPENAI_API_PUBLIC:false` reproduces a deployed Worker). The page and its
model list keep working."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace

import openai
import pytest

from tests.harness.client import USER, chat
from tests.harness.runtime import ROOT, LocalRuntime, RuntimeOptions
from tests.openai_api.test_openai_sdk import MODEL, sdk

CLOSED = RuntimeOptions(ai_pace=0, variables=(("OPENAI_API_PUBLIC", "false"),))
TOKEN = "s3cret-for-the-access-test"
GUARDED = RuntimeOptions(ai_pace=0, variables=(("AUTH_TOKEN", TOKEN), ("OPENAI_API_PUBLIC", "false")))


async def test_without_a_token_or_the_var_v1s_chat_routes_are_401_and_say_what_to_set(start_runtime):
    runtime = start_runtime(CLOSED)
    client = sdk(runtime)
    with pytest.raises(openai.AuthenticationError) as chat_refused:
        await client.chat.completions.create(model=MODEL, messages=USER)
    with pytest.raises(openai.AuthenticationError) as responses_refused:
        await client.responses.create(model=MODEL, input="hi")
    for refused in (chat_refused, responses_refused):
        assert refused.value.code == "unauthorized" and 'OPENAI_API_PUBLIC = "true"' in refused.value.message
    assert [model.id async for model in client.models.list()][0] == MODEL  # the page's model list stays open


async def test_the_page_and_its_routes_still_work_on_a_closed_v1(start_runtime, http):
    runtime = start_runtime(CLOSED)
    page = await http.get(runtime.url + "/")
    assert page.status_code == 200 and "<html" in page.text.lower()
    result = await chat(http, runtime.url, {"messages": USER})
    assert result.status == 200 and result.terminal.name == "done"


async def test_with_the_token_a_closed_v1_serves_its_holder(start_runtime):
    runtime = start_runtime(GUARDED)
    response = await sdk(runtime, api_key=TOKEN).responses.create(model=MODEL, input="hi")
    assert response.status == "completed"
    with pytest.raises(openai.AuthenticationError):
        await sdk(runtime, api_key="wrong").responses.create(model=MODEL, input="hi")


async def test_stored_responses_are_closed_with_the_rest_of_v1(start_runtime, http):
    runtime = start_runtime(CLOSED)
    some_id = "resp_" + "ab" * 32
    for method, path in (("GET", some_id), ("DELETE", some_id), ("POST", some_id + "/cancel")):
        answer = await http.request(method, f"{runtime.url}/v1/responses/{path}")
        assert answer.status_code == 401 and answer.json()["error"]["code"] == "unauthorized", (method, path)


async def test_a_stored_response_is_its_tokens_and_nobody_elses_after_the_token_changes(runtime_pool, http):
    # The owner rule: a stored response keeps the digest of the token that made it. Two
    # runtimes share the objects' storage, as one deployment does before and after the
    # AUTH_TOKEN secret is rotated (each its own runtime: the second needs the first's state).
    state = tempfile.mkdtemp(prefix="owner-state-", dir=ROOT / ".dev")
    try:
        first = LocalRuntime(replace(GUARDED, persist_to=state)).start()
        try:
            created = await sdk(first, api_key=TOKEN).responses.create(model=MODEL, input="hi", store=True)
            assert (await sdk(first, api_key=TOKEN).responses.retrieve(created.id)).status == "completed"
            conversation = await sdk(first, api_key=TOKEN).conversations.create(items=[{"role": "user", "content": "hi"}])
        finally:
            first.stop()
        rotated = LocalRuntime(RuntimeOptions(ai_pace=0, variables=(("AUTH_TOKEN", TOKEN + "-rotated"),), persist_to=state)).start()
        try:
            client = sdk(rotated, api_key=TOKEN + "-rotated")
            for call in (client.responses.retrieve, client.responses.delete, client.responses.cancel):
                with pytest.raises(openai.NotFoundError):
                    await call(created.id)
            with pytest.raises(openai.BadRequestError) as refused:
                await client.responses.create(model=MODEL, input="more", previous_response_id=created.id)
            assert refused.value.code == "previous_response_not_found"
            answer = await http.get(f"{rotated.url}/v1/responses/{created.id}?stream=true",
                                    headers={"authorization": f"Bearer {TOKEN}-rotated"})
            assert answer.status_code == 404
            # Its items and input items, and the conversation made with the old token, likewise (issue 40).
            with pytest.raises(openai.NotFoundError) as missing:
                await client.responses.create(model=MODEL, input=[{"role": "user", "content": "more"},
                                                                   {"type": "item_reference", "id": created.output[0].id}])
            assert (missing.value.code, missing.value.param) == ("item_not_found", "input[1]")
            with pytest.raises(openai.NotFoundError):
                await client.responses.input_items.list(created.id)
            for conversation_call in (client.conversations.retrieve, client.conversations.delete, client.conversations.items.list):
                with pytest.raises(openai.NotFoundError):
                    await conversation_call(conversation.id)
            with pytest.raises(openai.NotFoundError) as missing:
                await client.responses.create(model=MODEL, input="more", conversation=conversation.id)
            assert missing.value.code == "conversation_not_found"
        finally:
            rotated.stop()
    finally:
        shutil.rmtree(state, ignore_errors=True)

"""A /v1 that is never open by accident, in the real runtime: a Worker deployed without the
AUTH_TOKEN secret answers /v1's chat routes with 401 unless OPENAI_API_PUBLIC is "true"
(wrangler.toml: "false"; the local launchers set "true", so these runtimes set it back to
"false", as `--var OPENAI_API_PUBLIC:false` reproduces a deployed Worker). The page and its
model list keep working."""

from __future__ import annotations

import openai
import pytest

from tests.harness.client import USER, chat
from tests.harness.runtime import RuntimeOptions
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
